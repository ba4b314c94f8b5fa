"""The release overlays: each real release file (v26.5, v26.5.1) with the world's URLs and commits.

The real file is rewritten line by line and only these values change, so everything else
(package pins, comments, order) stays byte-identical and the two cannot drift:
- primus_pins.indexes.{pypi,torch,te}: the world's index URLs;
- primus_pins.sources.<component>.repo: the world's repository URL;
- primus_pins.sources.<component>.ref: the world's pinned commit when ref_kind is commit, its
  abbreviation (SHORT hex digits, as git abbreviates it) when ref_kind is short_commit (the release
  file knows only an abbreviated commit: so does the overlay; world.json has the full one), branch
  refs keep their branch names;
- `git+https://github.com/...` requirement URLs: the world's copy of that repository.
When PyYAML is importable, the result is loaded and compared with the original to prove that
nothing else changed.
"""
import re

SHORT = 7   # git's default abbreviation of a commit id

_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_]+):(?P<sep>\s*)(?P<value>.*?)\s*$")


def _walk(lines):
    """Yield (index, path tuple, scalar value or '') for every `key: value` line."""
    stack = []
    for index, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if not match:
            continue
        indent = len(match.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(key for _indent, key in stack) + (match.group("key"),)
        stack.append((indent, match.group("key")))
        yield index, path, match.group("value")


def ref_kinds(text):
    """{component: ref_kind} of primus_pins.sources in a release file's text."""
    return dict((path[2], value.strip("'\"")) for _line, path, value in _walk(text.splitlines(True))
                if len(path) == 4 and path[:2] == ("primus_pins", "sources") and path[3] == "ref_kind")


def written_ref(kind, commit):
    """What the overlay writes as the ref of a source pinned by a commit of that kind (None: a branch keeps its name)."""
    if kind == "commit":
        return commit
    if kind == "short_commit":
        return commit[:SHORT]
    return None


def _scalar(value):
    """value as a YAML plain scalar, quoted when YAML would read it as something else than that string (an
    abbreviated commit of digits only is an integer)."""
    if re.match(r"^[0-9a-f]+$", value) and not re.search(r"[a-f]", value):
        return '"%s"' % value
    if re.match(r"^[0-9]+[eE][0-9]+$", value):
        return '"%s"' % value
    return value


def render(text, indexes, sources, git_urls, note):
    """Return the overlay text.

    indexes: {"pypi": url, "torch": url, "te": url}
    sources: {component: (repo url, the full commit the release pins)}
    git_urls: {upstream git URL: world git URL}
    """
    lines = text.splitlines(True)
    values = dict((path, value) for _line, path, value in _walk(lines))
    replace = {}
    for key, url in indexes.items():
        replace[("primus_pins", "indexes", key)] = url
    for component, (url, commit) in sources.items():
        base = ("primus_pins", "sources", component)
        if base + ("repo",) not in values:
            raise KeyError("release file has no sources.%s" % component)
        replace[base + ("repo",)] = url
        ref = written_ref(values.get(base + ("ref_kind",)), commit)
        if ref is not None:
            replace[base + ("ref",)] = ref
    missing = set(replace) - set(values)
    if missing:
        raise KeyError("release file lacks %s" % sorted(missing))
    out = list(lines)
    for index, path, value in _walk(lines):
        if path in replace and value:
            match = _KEY.match(lines[index])
            out[index] = "%s%s:%s%s\n" % (match.group("indent"), match.group("key"), match.group("sep"),
                                          _scalar(replace[path]))
    for index, line in enumerate(out):
        for upstream, world in git_urls.items():
            line = line.replace("git+" + upstream, "git+" + world)
        out[index] = line
    return note + "".join(out)


def verify(original_text, overlay_text):
    """Raise if the overlay differs from the original anywhere but the fields it may replace."""
    try:
        import yaml
    except ImportError:
        return False
    original = yaml.safe_load(original_text)
    overlay = yaml.safe_load(overlay_text)
    allowed = [("primus_pins", "indexes"), ("primus_pins", "sources"), ("primus_pins", "torchrec", "packages")]

    def compare(a, b, path):
        if isinstance(a, dict) and isinstance(b, dict):
            if sorted(a) != sorted(b):
                raise AssertionError("keys differ at %s" % (path,))
            for key in a:
                compare(a[key], b[key], path + (key,))
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                raise AssertionError("list length differs at %s" % (path,))
            for i, (x, y) in enumerate(zip(a, b)):
                compare(x, y, path + (i,))
        elif a != b:
            ok = any(path[:len(p)] == p for p in allowed)
            if path[:2] == ("primus_pins", "sources") and path[-1] not in ("repo", "ref"):
                ok = False
            if not ok:
                raise AssertionError("overlay changed %s: %r -> %r" % ("/".join(map(str, path)), a, b))
    compare(original, overlay, ())
    return True
