"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-30
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('cell_tuple',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('digest', sa.LargeBinary(length=16), nullable=False),
    sa.Column('cells', sa.Text(), nullable=False, comment='JSON list: a string is a cell, an integer a text_value id'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cell_tuple')),
    sa.UniqueConstraint('digest', name=op.f('uq_cell_tuple_digest'))
    )
    op.create_table('op_code',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('category', sa.Text(), nullable=False),
    sa.Column('is_compute', sa.Boolean(), nullable=False, comment='conv / matmul: compute in the layer cost split'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_op_code')),
    sa.UniqueConstraint('name', name=op.f('uq_op_code_name'))
    )
    op.create_table('run',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('source_path', sa.Text(), nullable=False),
    sa.Column('file_name', sa.Text(), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('row_count', sa.Integer(), nullable=False, comment='data rows in the file (ops + signposts)'),
    sa.Column('op_count', sa.Integer(), nullable=False),
    sa.Column('signpost_count', sa.Integer(), nullable=False),
    sa.Column('columns', sa.Text(), nullable=False, comment='JSON list: the header, in file order'),
    sa.Column('static_columns', sa.Text(), nullable=False, comment='JSON list of header indexes interned in cell_tuple'),
    sa.Column('name_column', sa.String(length=16), nullable=False, comment='OP CODE or OP NAME'),
    sa.Column('newline', sa.String(length=2), nullable=False),
    sa.Column('final_newline', sa.Boolean(), nullable=False),
    sa.Column('bom', sa.Boolean(), nullable=False),
    sa.Column('export_exact', sa.Boolean(), nullable=False, comment='export reproduces the file byte for byte'),
    sa.Column('captured_at', sa.DateTime(), nullable=True, comment='from _YYYY_MM_DD_HH_MM_SS in the file name'),
    sa.Column('ingested_at', sa.DateTime(), nullable=False),
    sa.Column('freq_mhz', sa.Double(), nullable=False),
    sa.Column('freq_source', sa.Text(), nullable=False, comment='option | default | path of profile_log_device.csv'),
    sa.Column('arch', sa.String(length=32), nullable=True),
    sa.Column('label', sa.Text(), nullable=True),
    sa.Column('trace_matches_eager', sa.Boolean(), nullable=False),
    sa.Column('seconds', sa.Double(), nullable=True, comment='ingest wall time'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run')),
    sa.UniqueConstraint('sha256', name=op.f('uq_run_sha256'))
    )
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.create_index('ix_run_label_captured', ['label', 'captured_at'], unique=False)

    op.create_table('text_value',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('digest', sa.LargeBinary(length=16), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_text_value')),
    sa.UniqueConstraint('digest', name=op.f('uq_text_value_digest'))
    )
    op.create_table('run_tag',
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('key', sa.String(length=128), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_run_tag_run_id_run'), ondelete='CASCADE'),
    sa.UniqueConstraint('run_id', 'key', name=op.f('uq_run_tag_run_id_key'))
    )
    op.create_table('run_warning',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('row_no', sa.Integer(), nullable=True),
    sa.Column('column_name', sa.Text(), nullable=True),
    sa.Column('message', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_run_warning_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_warning'))
    )
    with op.batch_alter_table('run_warning', schema=None) as batch_op:
        batch_op.create_index('ix_run_warning_run', ['run_id'], unique=False)

    op.create_table('section',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.Text(), nullable=False, comment='eager, trace, or the base name of a custom pair'),
    sa.Column('kind', sa.String(length=16), nullable=False, comment='eager | trace | custom'),
    sa.Column('ordinal', sa.Integer(), nullable=False, comment="order of the section's start in the file"),
    sa.Column('start_row', sa.Integer(), nullable=False),
    sa.Column('end_row', sa.Integer(), nullable=True, comment='NULL: never closed'),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_section_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_section'))
    )
    with op.batch_alter_table('section', schema=None) as batch_op:
        batch_op.create_index('ix_section_run', ['run_id', 'kind'], unique=False)

    op.create_table('signpost',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('row_no', sa.Integer(), nullable=False, comment='1-based data row in the file'),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('message', sa.Text(), nullable=True, comment='the ATTRIBUTES cell'),
    sa.Column('host_ts', sa.BigInteger(), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False, comment='section_start | section_end | block | layer | marker'),
    sa.Column('static_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('cells', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_signpost_run_id_run'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['static_id'], ['cell_tuple.id'], name=op.f('fk_signpost_static_id_cell_tuple')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_signpost')),
    sa.UniqueConstraint('run_id', 'row_no', name=op.f('uq_signpost_run_id_row_no'))
    )
    op.create_table('op',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('row_no', sa.Integer(), nullable=False, comment='1-based data row in the file'),
    sa.Column('section_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True, comment="the eager / trace section (the oracle's); custom sections: view op_custom_section"),
    sa.Column('pos', sa.Integer(), nullable=True, comment="index among the run's ops of the same section name"),
    sa.Column('block', sa.Text(), nullable=True),
    sa.Column('layer', sa.Text(), nullable=True),
    sa.Column('attribution', sa.String(length=16), nullable=True, comment='signpost | eager_position'),
    sa.Column('marker_row', sa.Integer(), nullable=True, comment='row_no of the last marker signpost before'),
    sa.Column('op_code_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('op_type', sa.Text(), nullable=True),
    sa.Column('device_id', sa.Integer(), nullable=True),
    sa.Column('global_call_count', sa.BigInteger(), nullable=True),
    sa.Column('kernel_ns', sa.Double(), nullable=True),
    sa.Column('fw_ns', sa.Double(), nullable=True),
    sa.Column('op2op_ns', sa.Double(), nullable=True),
    sa.Column('fw_start_cycle', sa.Double(), nullable=True),
    sa.Column('fw_end_cycle', sa.Double(), nullable=True),
    sa.Column('host_start_ns', sa.BigInteger(), nullable=True),
    sa.Column('host_end_ns', sa.BigInteger(), nullable=True),
    sa.Column('cores', sa.Integer(), nullable=True),
    sa.Column('fidelity', sa.Text(), nullable=True),
    sa.Column('trace_id', sa.Text(), nullable=True, comment='METAL TRACE ID, stripped'),
    sa.Column('replay_session', sa.Text(), nullable=True, comment='METAL TRACE REPLAY SESSION ID, stripped'),
    sa.Column('input0_shape', sa.Text(), nullable=True, comment='logical W x Z x Y x X of input 0'),
    sa.Column('input0_memory', sa.Text(), nullable=True),
    sa.Column('output0_memory', sa.Text(), nullable=True),
    sa.Column('static_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('cells', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['op_code_id'], ['op_code.id'], name=op.f('fk_op_op_code_id_op_code')),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_op_run_id_run'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['section_id'], ['section.id'], name=op.f('fk_op_section_id_section'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['static_id'], ['cell_tuple.id'], name=op.f('fk_op_static_id_cell_tuple')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_op'))
    )
    with op.batch_alter_table('op', schema=None) as batch_op:
        batch_op.create_index('ix_op_run_row', ['run_id', 'row_no'], unique=True)
        batch_op.create_index('ix_op_section_pos', ['section_id', 'pos'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('op', schema=None) as batch_op:
        batch_op.drop_index('ix_op_section_pos')
        batch_op.drop_index('ix_op_run_row')

    op.drop_table('op')
    op.drop_table('signpost')
    with op.batch_alter_table('section', schema=None) as batch_op:
        batch_op.drop_index('ix_section_run')

    op.drop_table('section')
    with op.batch_alter_table('run_warning', schema=None) as batch_op:
        batch_op.drop_index('ix_run_warning_run')

    op.drop_table('run_warning')
    op.drop_table('run_tag')
    op.drop_table('text_value')
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index('ix_run_label_captured')

    op.drop_table('run')
    op.drop_table('op_code')
    op.drop_table('cell_tuple')
