"""``warehouse serve``: a read-only web dashboard over the library (Starlette, Jinja2; the ``web`` extra)."""
