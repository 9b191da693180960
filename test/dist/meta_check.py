#!/usr/bin/env python3
"""Check a PGXN distribution's META.json against the PGXN Meta Spec 1.0 (https://pgxn.org/spec/)
and concurrency_kit's own rules. Debian ships no PGXN::Meta::Validator, hence this, stdlib only.

usage: meta_check.py DIST [META]
  DIST  the release zip (make dist) or a source tree; its file list and control files are checked
  META  a META.json to check in place of DIST's own (the negative cases of test/dist/check.sh)
Prints one line per problem and exits 1, or one line "ok ..." and exits 0."""
import json, os, re, sys, urllib.parse, zipfile

# Semantic Versioning 2.0.0, which the spec's Version type adopts.
NUM = r'(?:0|[1-9][0-9]*)'
PRE = r'(?:' + NUM + r'|[0-9]*[A-Za-z-][0-9A-Za-z-]*)'
SEMVER = (NUM + r'\.' + NUM + r'\.' + NUM + r'(?:-' + PRE + r'(?:\.' + PRE + r')*)?'
          r'(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?')
VERSION_RE = re.compile(SEMVER + r'\Z')
RANGE_CLAUSE_RE = re.compile(r'\s*(?:(?:==|!=|<=|>=|<|>)\s*)?' + SEMVER + r'\s*\Z')
LICENSES = set('agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 '
               'lgpl_2_1 lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib '
               'open_source restricted unrestricted unknown'.split())
PHASES = {'configure', 'build', 'test', 'runtime', 'develop'}
RELATIONS = {'requires', 'recommends', 'suggests', 'conflicts'}


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, where, msg):
        self.errors.append(f'META.json: {where}: {msg}')

    # --- the spec's data types -------------------------------------------------------------------
    def string(self, where, v):
        if not isinstance(v, str) or not v:
            self.err(where, 'must be a non-empty string')
            return False
        return True

    def term(self, where, v):  # >= 2 characters, no / \ space or control character
        if self.string(where, v) and (len(v) < 2 or re.search(r'[/\\\s\x00-\x1f\x7f]', v)):
            self.err(where, f'{v!r} is not a Term (2+ characters, no slash, backslash, space or control)')

    def version(self, where, v):
        if self.string(where, v) and not VERSION_RE.match(v):
            self.err(where, f'{v!r} is not a semantic version (X.Y.Z[-pre][+build])')

    def version_range(self, where, v):
        if (type(v) is int and v == 0) or v == '0':
            return
        if isinstance(v, str) and v and all(RANGE_CLAUSE_RE.match(c) for c in v.split(',')):
            return
        self.err(where, f'{v!r} is not a version range (0, or [op] X.Y.Z clauses joined by commas)')

    def uri(self, where, v):
        if self.string(where, v):
            u = urllib.parse.urlsplit(v)
            scheme_ok = re.match(r'[A-Za-z][A-Za-z0-9+.-]*\Z', u.scheme)
            if not scheme_ok or not (u.netloc or u.path) or re.search(r'\s', v):
                self.err(where, f'{v!r} is not a URI')

    def email(self, where, v):
        if self.string(where, v) and not re.match(r'[^@\s]+@[^@\s]+\.[^@\s]+\Z', v):
            self.err(where, f'{v!r} is not an email address')

    def path(self, where, v):  # relative, unix conventions
        if self.string(where, v) and (v.startswith('/') or '\\' in v or '..' in v.split('/')):
            self.err(where, f'{v!r} is not a relative unix path')

    def one_or_list(self, where, v, item):  # the spec's List, which may be written as one String
        items = v if isinstance(v, list) else [v]
        if not items or len(set(map(json.dumps, items))) != len(items):
            self.err(where, 'must be a non-empty list without duplicates')
        for i, x in enumerate(items):
            item(f'{where}[{i}]' if isinstance(v, list) else where, x)

    def mapping(self, where, v, known, required=(), any_of=None):
        """An object whose keys are the spec's or custom (x_/X_); returns it, or {} when it is not one."""
        if not isinstance(v, dict):
            self.err(where, 'must be an object')
            return {}
        for k in v:
            if k not in known and not re.match(r'[xX]_', k):
                self.err(where, f'unknown key {k!r} (custom keys start with x_ or X_)')
        for k in required:
            if k not in v:
                self.err(where, f'required key {k!r} is missing')
        if any_of and not any(all(k in v for k in ks) for ks in any_of):
            self.err(where, 'needs one of ' + ' or '.join('+'.join(ks) for ks in any_of))
        return v

    # --- the structure ---------------------------------------------------------------------------
    def meta(self, m):
        top = {'name': self.term, 'version': self.version, 'abstract': self.string, 'maintainer': self.maintainer,
               'license': self.license, 'provides': self.provides, 'meta-spec': self.meta_spec,
               'description': self.string, 'generated_by': self.string, 'tags': self.tags,
               'no_index': self.no_index, 'prereqs': self.prereqs, 'release_status': self.release_status,
               'resources': self.resources}
        m = self.mapping('(top)', m, top, required=('name', 'version', 'abstract', 'maintainer', 'license',
                                                    'provides', 'meta-spec'))
        for k, v in m.items():
            if k in top:
                top[k](k, v)
        return m

    def maintainer(self, where, v):
        self.one_or_list(where, v, self.string)

    def license(self, where, v):
        if isinstance(v, dict):
            if not v:
                self.err(where, 'must name at least one license')
            for name, url in v.items():
                self.uri(f'{where}.{name}', url)
        else:
            def known(w, x):
                if x not in LICENSES:
                    self.err(w, f'{x!r} is not a License String of the spec (e.g. postgresql, mit, bsd)')
            self.one_or_list(where, v, known)

    def provides(self, where, v):
        if not isinstance(v, dict) or not v:
            self.err(where, 'must be an object naming at least one extension')
            return
        for ext, e in v.items():
            w = f'{where}.{ext}'
            self.term(w, ext)
            e = self.mapping(w, e, {'file', 'version', 'abstract', 'docfile'}, required=('file', 'version'))
            for k, check in (('file', self.path), ('version', self.version), ('abstract', self.string),
                             ('docfile', self.path)):
                if k in e:
                    check(f'{w}.{k}', e[k])

    def meta_spec(self, where, v):
        v = self.mapping(where, v, {'version', 'url'}, required=('version',))
        if 'version' in v and not (isinstance(v['version'], str) and re.match(r'1\.0\.[0-9]+\Z', v['version'])):
            self.err(f'{where}.version', f"{v['version']!r}: this checks spec 1.0.x only")
        if 'url' in v:
            self.uri(f'{where}.url', v['url'])

    def tags(self, where, v):
        def tag(w, x):  # fewer than 256 characters, no / \ or control character
            if self.string(w, x) and (len(x) > 255 or re.search(r'[/\\\x00-\x1f\x7f]', x)):
                self.err(w, f'{x!r} is not a Tag')
        self.one_or_list(where, v, tag)

    def no_index(self, where, v):
        v = self.mapping(where, v, {'file', 'directory'}, any_of=(('file',), ('directory',)))
        for k in ('file', 'directory'):
            if k in v:
                self.one_or_list(f'{where}.{k}', v[k], self.path)

    def prereqs(self, where, v):
        v = self.mapping(where, v, PHASES)
        if not any(p in v for p in PHASES):
            self.err(where, 'names no phase (' + ', '.join(sorted(PHASES)) + ')')
        for phase in PHASES & v.keys():
            w = f'{where}.{phase}'
            rels = self.mapping(w, v[phase], RELATIONS, any_of=tuple((r,) for r in sorted(RELATIONS)))
            for rel in RELATIONS & rels.keys():
                deps = rels[rel]
                if not isinstance(deps, dict) or not deps:
                    self.err(f'{w}.{rel}', 'must map at least one extension to a version range')
                    continue
                for name, rng in deps.items():
                    self.term(f'{w}.{rel}', name)
                    self.version_range(f'{w}.{rel}.{name}', rng)

    def release_status(self, where, v):
        if v not in ('stable', 'testing', 'unstable'):
            self.err(where, f'{v!r} is not stable, testing or unstable')

    def resources(self, where, v):
        v = self.mapping(where, v, {'homepage', 'bugtracker', 'repository'},
                         any_of=(('homepage',), ('bugtracker',), ('repository',)))
        if 'homepage' in v:
            self.uri(f'{where}.homepage', v['homepage'])
        if 'bugtracker' in v:
            w = f'{where}.bugtracker'
            b = self.mapping(w, v['bugtracker'], {'web', 'mailto'}, any_of=(('web',), ('mailto',)))
            if 'web' in b:
                self.uri(f'{w}.web', b['web'])
            if 'mailto' in b:
                self.email(f'{w}.mailto', b['mailto'])
        if 'repository' in v:
            w = f'{where}.repository'
            r = self.mapping(w, v['repository'], {'url', 'web', 'type'}, any_of=(('url', 'type'), ('web',)))
            for k in ('url', 'web'):
                if k in r:
                    self.uri(f'{w}.{k}', r[k])
            if 'type' in r and not (isinstance(r['type'], str) and re.match(r'[a-z]+\Z', r['type'])):
                self.err(f'{w}.type', f"{r['type']!r} is not a lowercase VCS name")


def default_version(control_text):
    found = re.search(r"^\s*default_version\s*=\s*'([^']*)'", control_text, re.M)
    return found and found.group(1)


def check_dist(c, m, files, read):
    """concurrency_kit's own rules, and that what META.json names is in the distribution."""
    provides = m.get('provides') if isinstance(m.get('provides'), dict) else {}
    for ext, e in provides.items():
        if not isinstance(e, dict):
            continue
        w = f'provides.{ext}'
        for k in ('file', 'docfile'):
            if isinstance(e.get(k), str) and e[k] not in files:
                c.err(f'{w}.{k}', f'{e[k]!r} is not in the distribution')
        if not e.get('abstract'):
            c.err(w, 'has no abstract (PGXN shows it for the extension)')
        if f'{ext}.control' not in files:
            c.err(w, f'{ext}.control is not in the distribution')
            continue
        dv = default_version(read(f'{ext}.control'))
        if e.get('version') != dv:
            c.err(f'{w}.version', f"{e.get('version')!r} is not {ext}.control's default_version {dv!r}")
        if e.get('file') != f'sql/{ext}--{dv}.sql':
            c.err(f'{w}.file', f"{e.get('file')!r} is not the install script sql/{ext}--{dv}.sql")
        if ext == m.get('name') and m.get('version') != dv:
            c.err('version', f"{m.get('version')!r} is not {ext}.control's default_version {dv!r}")
    if m.get('name') not in provides:
        c.err('name', f"{m.get('name')!r} is not among the extensions in provides")


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f'duplicate keys {dup}')
    return dict(pairs)


def main(dist, meta_path=None):
    c = Checker()
    if zipfile.is_zipfile(dist):
        z = zipfile.ZipFile(dist)
        names = [n for n in z.namelist() if not n.endswith('/')]
        prefix = names[0].split('/')[0] + '/' if names else ''
        if not prefix or any(not n.startswith(prefix) for n in names):
            c.err('(zip)', 'every entry must be under one top directory NAME-VERSION/')
        files = {n[len(prefix):] for n in names}
        read = lambda f: z.read(prefix + f).decode()
        # pgxnclient reads the first entry whose name ends in META.json as the distribution's
        first = next((n for n in names if n.endswith('META.json')), None)
        if first and first != prefix + 'META.json':
            c.err('(zip)', f'{first} comes before {prefix}META.json: pgxnclient would read it')
    else:
        files = {os.path.relpath(os.path.join(d, f), dist) for d, ds, fs in os.walk(dist) for f in fs
                 if '.git' not in os.path.relpath(d, dist).split(os.sep)}
        read = lambda f: open(os.path.join(dist, f), encoding='utf-8').read()
        prefix = None
    try:
        text = open(meta_path, encoding='utf-8').read() if meta_path else read('META.json')
        m = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except (OSError, KeyError, ValueError) as e:
        print(f'META.json: cannot be read as JSON: {e}')
        return 1
    m = c.meta(m)
    check_dist(c, m, files, read)
    if prefix and prefix != f"{m.get('name')}-{m.get('version')}/":
        c.err('(zip)', f"top directory {prefix} is not {m.get('name')}-{m.get('version')}/")
    for e in c.errors:
        print(e)
    if not c.errors:
        print(f"ok {m['name']} {m['version']}: META.json follows PGXN Meta Spec 1.0 and matches the distribution")
    return 1 if c.errors else 0


if __name__ == '__main__':
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
