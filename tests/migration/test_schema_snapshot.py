"""The schema the migrations build is exactly tests/migration/schema.sql, in procrastinate's manner.

One database is built as `memctx migrate` builds it (every migration, then the embedding space of
the default 384-d embedder, which fixes the vector columns and builds the HNSW indexes); another
by running the snapshot. Both are described from the catalogs, the same way on the same server, and
any difference fails with a diff of the two descriptions. pg_dump's text is not compared: it
differs between major versions, and this test also runs on PostgreSQL 16 (MEMCTX_TEST_POSTGRES=16).

The description covers schemas, extensions, types, tables and their columns (type, default,
generated, identity, nullability, storage), constraints, indexes, triggers, RLS flags and policies,
views, sequences, functions, extended statistics, publications, event triggers, comments and every
grant (table, column, sequence, function, schema, type, default privileges). Roles are not
compared: they belong to the cluster the two databases share. Objects of extensions are described
by the extension's name and version.
"""

from __future__ import annotations

import difflib
import shutil
import uuid
from collections import defaultdict
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from memctx import db
from memctx.app import prepare_database
from memctx.config import Settings
from memctx.migrate import MIGRATIONS_DIR, configure_embedding_space, migrate

SNAPSHOT = Path(__file__).with_name("schema.sql")
REGENERATE = ".venv/bin/python scripts/schema_snapshot.py"

# Schemas of the database's own objects: not the catalogs, TOAST or temporary schemas.
_OURS = "{ns} <> 'information_schema'::regnamespace and {ns}::regnamespace::text !~ '^pg_'"
# Not a member of an extension (those are described by the extension).
_NOT_EXT = "not exists (select from pg_depend e where e.classid = '{cat}'::regclass and e.objid = {oid} and e.deptype = 'e')"


def _where(ns: str, cat: str, oid: str) -> str:
    return f"{_OURS.format(ns=ns)} and {_NOT_EXT.format(cat=cat, oid=oid)}"


_GRANTEE = "case {g} when 0 then 'PUBLIC' else {g}::regrole::text end"

# Grants, as rows of (object oid, line): an object's default privileges are spelled out when it has
# no ACL of its own (a function's EXECUTE to PUBLIC), and the owner's own privileges are left out.
_GRANTS = f"""
select x.oid, format('grant %s on %s%s to %s%s', a.privilege_type,
                     case x.kind when 'n' then 'schema ' when 'T' then 'type ' when 's' then 'sequence '
                                 when 'f' then 'function ' else '' end, x.name, {_GRANTEE.format(g='a.grantee')},
                     case when a.is_grantable then ' with grant option' else '' end) as line
  from ({{objects}}) x, aclexplode(coalesce(x.acl, acldefault(x.kind, x.owner))) a
 where a.grantee <> x.owner
"""

_QUERIES = {
    "schemas": f"""
        select n.oid, n.nspname::text as name, n.nspacl as acl, 'n'::"char" as kind, n.nspowner as owner,
               obj_description(n.oid, 'pg_namespace') as comment
          from pg_namespace n where {_where('n.oid', 'pg_namespace', 'n.oid')}""",
    "extensions": """
        select e.extname, e.extversion, e.extnamespace::regnamespace::text as schema from pg_extension e""",
    "types": f"""
        select t.oid, t.oid::regtype::text as name, t.typtype,
               (select string_agg(quote_literal(l.enumlabel), ', ' order by l.enumsortorder)
                  from pg_enum l where l.enumtypid = t.oid) as labels,
               format_type(t.typbasetype, t.typtypmod) as base, t.typnotnull, t.typdefault,
               (select string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum)
                  from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped) as attributes,
               t.typacl as acl, 'T'::"char" as kind, t.typowner as owner, obj_description(t.oid, 'pg_type') as comment
          from pg_type t
         where {_where('t.typnamespace', 'pg_type', 't.oid')}
           and t.typtype in ('c', 'd', 'e', 'r', 'm')
           and (t.typrelid = 0 or (select c.relkind from pg_class c where c.oid = t.typrelid) = 'c')""",
    "relations": f"""
        select c.oid, c.oid::regclass::text as name, c.relkind, c.relpersistence, c.relrowsecurity,
               c.relforcerowsecurity, c.reloptions,
               case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid) end as viewdef,
               case when s.seqrelid is not null then
                 format('%s start %s increment %s min %s max %s cache %s%s', format_type(s.seqtypid, null), s.seqstart,
                        s.seqincrement, s.seqmin, s.seqmax, s.seqcache, case when s.seqcycle then ' cycle' else '' end)
                 || coalesce((select format(' owned by %s.%I (%s)', d.refobjid::regclass, a.attname,
                                            case d.deptype when 'i' then 'identity' else 'serial' end)
                                from pg_depend d join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
                               where d.classid = 'pg_class'::regclass and d.objid = s.seqrelid and d.refobjsubid > 0
                                 and d.deptype in ('a', 'i')), '')
               end as sequence,
               c.relacl as acl, case c.relkind when 'S' then 's' else 'r' end::"char" as kind, c.relowner as owner,
               obj_description(c.oid, 'pg_class') as comment
          from pg_class c left join pg_sequence s on s.seqrelid = c.oid
         where {_where('c.relnamespace', 'pg_class', 'c.oid')} and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')""",
    "columns": f"""
        select a.attrelid as oid, a.attrelid::regclass::text as relation, a.attname, format_type(a.atttypid, a.atttypmod) as type,
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid) as expr, a.attgenerated, a.attidentity,
               nullif(a.attstorage, t.typstorage) as storage,
               case when a.attcollation <> t.typcollation then a.attcollation::regcollation::text end as collation,
               col_description(a.attrelid, a.attnum) as comment
          from pg_attribute a
          join pg_class c on c.oid = a.attrelid
          join pg_type t on t.oid = a.atttypid
          left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
         where {_where('c.relnamespace', 'pg_class', 'c.oid')} and c.relkind in ('r', 'p', 'v', 'm', 'f')
           and a.attnum > 0 and not a.attisdropped
         order by a.attrelid, a.attnum""",
    "column_grants": f"""
        select a.attrelid as oid,
               format('grant %s (%I) on %s to %s%s', x.privilege_type, a.attname, a.attrelid::regclass,
                      {_GRANTEE.format(g='x.grantee')}, case when x.is_grantable then ' with grant option' else '' end) as line
          from pg_attribute a join pg_class c on c.oid = a.attrelid, aclexplode(a.attacl) x
         where {_where('c.relnamespace', 'pg_class', 'c.oid')} and a.attnum > 0 and not a.attisdropped""",
    # Of tables and domains. Not-null constraints (rows of pg_constraint since PostgreSQL 18) are
    # the columns' `not null`.
    "constraints": f"""
        select coalesce(nullif(c.conrelid, 0), c.contypid) as oid,
               format('constraint %I on %s %s', c.conname,
                      case when c.conrelid <> 0 then c.conrelid::regclass::text else c.contypid::regtype::text end,
                      pg_get_constraintdef(c.oid)) as line
          from pg_constraint c
         where c.contype <> 'n' and {_where('c.connamespace', 'pg_constraint', 'c.oid')}""",
    "indexes": f"""
        select i.indrelid as oid, 'index ' || pg_get_indexdef(i.indexrelid) as line
          from pg_index i join pg_class c on c.oid = i.indexrelid
         where {_where('c.relnamespace', 'pg_class', 'i.indrelid')}""",
    "triggers": """
        select t.tgrelid as oid, 'trigger ' || pg_get_triggerdef(t.oid)
               || case t.tgenabled when 'O' then '' else ' (enabled ' || t.tgenabled::text || ')' end as line
          from pg_trigger t where not t.tgisinternal""",
    "policies": f"""
        select p.polrelid as oid,
               format('policy %I on %s %s for %s to %s', p.polname, p.polrelid::regclass,
                      case when p.polpermissive then 'permissive' else 'restrictive' end,
                      case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update'
                                    when 'd' then 'delete' else 'all' end,
                      (select string_agg(role, ', ' order by role)
                         from (select {_GRANTEE.format(g='r')} as role from unnest(p.polroles) r) roles))
               || coalesce(' using ' || pg_get_expr(p.polqual, p.polrelid), '')
               || coalesce(' with check ' || pg_get_expr(p.polwithcheck, p.polrelid), '') as line
          from pg_policy p""",
    "functions": f"""
        select p.oid, p.oid::regprocedure::text as name, p.prokind,
               case when p.prokind <> 'a' then pg_get_functiondef(p.oid) end as definition,
               p.proacl as acl, 'f'::"char" as kind, p.proowner as owner, obj_description(p.oid, 'pg_proc') as comment
          from pg_proc p where {_where('p.pronamespace', 'pg_proc', 'p.oid')}""",
    "statistics": f"""
        select pg_get_statisticsobjdef(s.oid) as line from pg_statistic_ext s
         where {_where('s.stxnamespace', 'pg_statistic_ext', 's.oid')}""",
    # Other kinds of schema objects, by name only; none is expected.
    "others": " union all ".join(f"""
        select pg_describe_object('{cat}'::regclass, o.oid, 0) as line from {cat} o
         where {_where(f'o.{ns}', cat, 'o.oid')}""" for cat, ns in (
        ("pg_operator", "oprnamespace"), ("pg_collation", "collnamespace"), ("pg_ts_config", "cfgnamespace"),
        ("pg_ts_dict", "dictnamespace"), ("pg_opclass", "opcnamespace"), ("pg_opfamily", "opfnamespace"),
        ("pg_conversion", "connamespace"))),
    "publications": """
        select format('publication %I%s%s', p.pubname, case when p.puballtables then ' for all tables' else '' end,
                      coalesce(' tables ' || (select string_agg(format('%I.%I', t.schemaname, t.tablename), ', '
                                                                order by t.schemaname, t.tablename)
                                               from pg_publication_tables t where t.pubname = p.pubname), '')) as line
          from pg_publication p""",
    "event_triggers": """
        select format('event trigger %I on %s execute %s', e.evtname, e.evtevent, e.evtfoid::regproc) as line
          from pg_event_trigger e""",
    "default_privileges": f"""
        select format('default privileges of %s%s on %s: %s to %s', d.defaclrole::regrole,
                      coalesce(' in schema ' || nullif(d.defaclnamespace, 0)::regnamespace::text, ''), d.defaclobjtype,
                      a.privilege_type, {_GRANTEE.format(g='a.grantee')}) as line
          from pg_default_acl d, aclexplode(d.defaclacl) a""",
}

_STORAGE = {"p": "plain", "e": "external", "m": "main", "x": "extended"}
_RELKIND = {"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view", "f": "foreign table",
            "S": "sequence"}
_TYPTYPE = {"c": "composite", "d": "domain", "e": "enum", "r": "range", "m": "multirange"}


def _indented(items: list[str], prefix: str = "  ") -> list[str]:
    return [prefix + line for item in items for line in item.splitlines()]


def _column(c: dict) -> str:
    line = f"column {c['relation']}.{c['attname']} {c['type']}"
    if c["attnotnull"]:
        line += " not null"
    if c["attgenerated"]:
        line += f" generated always as ({c['expr']}) {'stored' if c['attgenerated'] == 's' else 'virtual'}"
    elif c["expr"] is not None:
        line += f" default {c['expr']}"
    if c["attidentity"]:
        line += f" generated {'always' if c['attidentity'] == 'a' else 'by default'} as identity"
    if c["storage"]:
        line += f" storage {_STORAGE[c['storage']]}"
    if c["collation"]:
        line += f" collate {c['collation']}"
    return line + (f" -- {c['comment']}" if c["comment"] else "")


def _type_head(t: dict) -> str:
    kind = _TYPTYPE[t["typtype"]]
    head = f"type {t['name']} {kind}"
    if kind in ("enum", "composite"):
        head += f" ({t['labels'] if kind == 'enum' else t['attributes'] or ''})"
    elif kind == "domain":
        head += f" over {t['base']}" + (" not null" if t["typnotnull"] else "")
        head += f" default {t['typdefault']}" if t["typdefault"] is not None else ""
    return head


def _relation_head(r: dict) -> str:
    head = f"{_RELKIND[r['relkind']]} {r['name']}"
    if r["relpersistence"] == "u":
        head += " unlogged"
    if r["relrowsecurity"]:
        head += " row level security" + (" forced" if r["relforcerowsecurity"] else "")
    if r["reloptions"]:
        head += f" with ({', '.join(sorted(r['reloptions']))})"
    return head + (f" {r['sequence']}" if r["sequence"] else "")


def _read_catalogs(url: str) -> tuple[dict[str, list[dict]], list[dict]]:
    with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
        conn.execute("set search_path = ''")  # every name in the output carries its schema
        rows = {name: conn.execute(query).fetchall() for name, query in _QUERIES.items()}
        grants = [row for source in ("schemas", "types", "relations", "functions")
                  for row in conn.execute(_GRANTS.format(objects=_QUERIES[source])).fetchall()]
    return rows, grants


def describe(url: str) -> list[str]:
    """The schema of the database at `url` as lines of text: the same for the same schema whatever
    statements built it, in whatever order. Each line names its object in full, so that a line of a
    diff reads on its own; lines about a table, sequence, type or function follow its own line."""
    rows, grants = _read_catalogs(url)
    attached = defaultdict(list)  # constraints, indexes, triggers, policies and grants, by object
    for row in [*grants, *rows["column_grants"], *rows["constraints"], *rows["indexes"], *rows["triggers"],
                *rows["policies"]]:
        attached[row["oid"]].append(row["line"])
    body = defaultdict(list)  # a relation's columns (in their order) and view query, a function's definition
    for c in rows["columns"]:
        body[c["oid"]].append(_column(c))
    for r in rows["relations"]:
        body[r["oid"]] += _indented([r["viewdef"]] if r["viewdef"] else [], f"{r['name']} as ")
    for f in rows["functions"]:
        body[f["oid"]] += _indented([f["definition"] or ""], f"{f['name']} | ")

    heads = [(s["oid"], f"schema {s['name']}", s["comment"]) for s in rows["schemas"]]
    heads += [(t["oid"], _type_head(t), t["comment"]) for t in rows["types"]]
    heads += [(r["oid"], _relation_head(r), r["comment"]) for r in rows["relations"]]
    heads += [(f["oid"], f"{'aggregate' if f['prokind'] == 'a' else 'function'} {f['name']}", f["comment"])
              for f in rows["functions"]]
    blocks = [[head + (f" -- {comment}" if comment else ""), *_indented(body[oid]), *_indented(sorted(attached[oid]))]
              for oid, head, comment in heads]
    blocks += [[f"extension {e['extname']} {e['extversion']} in schema {e['schema']}"] for e in rows["extensions"]]
    for source in ("statistics", "others", "publications", "event_triggers", "default_privileges"):
        blocks += [[f"{source}: {row['line']}"] for row in rows[source]]
    # Sorted by their first line, so that the order objects were created in does not matter.
    return [line for block in sorted(blocks) for line in block]


@pytest.fixture(scope="module")
def new_database(admin_url):
    """Makes empty databases, dropped at the end of the module."""
    made = []

    def make() -> str:
        name = f"memctx_schema_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'create database "{name}"')
        made.append(name)
        return make_conninfo(admin_url, dbname=name)

    yield make
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name in made:
            conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture(scope="module")
def snapshot(new_database) -> list[str]:
    """The description of a database built from tests/migration/schema.sql."""
    url = new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute(SNAPSHOT.read_text(encoding="utf-8"), prepare=False)
        except psycopg.Error as exc:
            pytest.fail(f"tests/migration/{SNAPSHOT.name} does not load on this server: {exc}\n"
                        f"Regenerate it with `{REGENERATE}`.", pytrace=False)
    return describe(url)


def _difference(snapshot: list[str], migrated: list[str]) -> str:
    return "\n".join(difflib.unified_diff(snapshot, migrated, fromfile=f"{SNAPSHOT.name} (snapshot)",
                                          tofile="migrations/ (memctx migrate)", lineterm=""))


def test_the_migrations_build_the_schema_of_the_snapshot(new_database, snapshot, embedder):
    url = new_database()
    prepare_database(Settings(database_url=url), url, embedder)
    difference = _difference(snapshot, describe(url))
    if difference:
        pytest.fail(f"The schema that migrations/ builds is not the one in tests/migration/{SNAPSHOT.name}"
                    f" (- snapshot, + migrations):\n{difference}\n\nIf the migrations are right, regenerate the "
                    f"snapshot with `{REGENERATE}` and review its diff.", pytrace=False)


def test_a_schema_change_in_a_migration_is_a_difference(new_database, snapshot, tmp_path):
    """The comparison sees what a migration changes, the embedding space included."""
    for path in MIGRATIONS_DIR.glob("*.sql"):
        shutil.copy(path, tmp_path)
    (tmp_path / "9999_pinned.sql").write_text(
        "alter table memctx.messages add column pinned boolean not null default false;\n"
        "grant update (pinned) on memctx.messages to authenticated;\n")
    url = new_database()
    with db.connect(url, Settings(database_url=url)) as conn:
        migrate(conn, tmp_path)
        configure_embedding_space(conn, "another-model", 768)
    changed = {line for line in _difference(snapshot, describe(url)).splitlines() if line[:1] in "+-"}
    assert "+  column memctx.messages.pinned boolean not null default false" in changed
    assert "+  grant UPDATE (pinned) on memctx.messages to authenticated" in changed
    assert "+  column memctx.messages.embedding public.vector(768) storage main" in changed
    assert "-  column memctx.messages.embedding public.vector(384) storage plain" in changed
