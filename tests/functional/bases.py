"""Converged bases copied instead of converged again (make test: each distinct base is converged once per worker).

A venv, its scripts, the stage stamps, env.sh, the modulefile, the manifest and the logs hold the base's absolute path,
so a copy somewhere else would be a different base. relocate_copy() copies a base to a path of the same length in
bytes and replaces the old path by the new one everywhere in it (file contents, binary files included, and symlink
targets), so sizes, offsets and mtimes stay as they were; then it replaces the digests of the files it rewrote (sha256
in hex, as the manifest and the stamps record them (or its first 16 digits), and in unpadded urlsafe base64, as pip's RECORD files do) wherever
the copy records them, until no recorded digest is stale. The copy is then the base a converge at the new path would
have left: the tests prove that it re-runs with changed=0, makes no request to the world and passes verify.
"""
import base64
import hashlib
import os
import re
import stat
import subprocess


def _digests(data):
    """The forms in which a base records the sha256 of a file's bytes: hex (and its first 16 hex digits, as the
    manifest's summary shows it) and pip's RECORD form."""
    raw = hashlib.sha256(data).digest()
    return [raw.hex().encode(), raw.hex()[:16].encode(), base64.urlsafe_b64encode(raw).rstrip(b"=")]


def _entries(root):
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            yield os.path.join(parent, name)


def _rewrite(path, st, data):
    """Write data (the same length as the file) over the file in place: hard links stay links, owner, mode and mtime
    stay (a read-only file is made writable for the write only)."""
    if not st.st_mode & stat.S_IWUSR:
        os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IWUSR)
    with open(path, "r+b") as handle:
        handle.write(data)
    if not st.st_mode & stat.S_IWUSR:
        os.chmod(path, stat.S_IMODE(st.st_mode))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def relocate_copy(src, dest):
    """Copy the tree src to dest (which must not exist, and whose path is as long as src's in bytes) as a tree made
    at dest: returns {"files": rewritten files, "links": re-pointed symlinks, "digests": files whose recorded digests
    were updated}."""
    old, new = os.fsencode(os.path.abspath(src)), os.fsencode(os.path.abspath(dest))
    if len(old) != len(new):
        raise ValueError("a relocated copy needs a path of the same length: %r has %d bytes, %r %d" % (
            src, len(old), dest, len(new)))
    if os.path.lexists(dest):
        raise FileExistsError("%s exists: a relocated copy is made at a new path" % dest)
    if not os.path.isdir(src) or os.path.islink(src):
        raise NotADirectoryError("%s is not a directory" % src)
    subprocess.run(["cp", "-a", "--", src, dest], check=True)
    done = {"files": 0, "links": 0, "digests": 0}
    stale = {}           # an old digest form -> its new form
    seen = set()         # (device, inode): a hard-linked file is rewritten once
    parents = {}         # directory -> its stat before a symlink in it was re-made
    for path in list(_entries(dest)):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(os.fsencode(path))
            if old in target:
                parent = os.path.dirname(path)
                parents.setdefault(parent, os.stat(parent))
                os.unlink(path)
                os.symlink(target.replace(old, new), path)
                os.lchown(path, st.st_uid, st.st_gid)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
                done["links"] += 1
        elif stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            with open(path, "rb") as handle:
                data = handle.read()
            if old in data:
                changed = data.replace(old, new)
                stale.update(zip(_digests(data), _digests(changed)))
                _rewrite(path, st, changed)
                done["files"] += 1
    for _round in range(8):
        if not stale:
            break
        # The longest forms first: a full digest is replaced whole, not as its 16-digit prefix.
        pattern = re.compile(b"|".join(re.escape(form) for form in sorted(stale, key=len, reverse=True)))
        now_stale = {}
        for path in _entries(dest):
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            changed = pattern.sub(lambda match: stale[match.group(0)], data)
            if changed != data:
                now_stale.update(zip(_digests(data), _digests(changed)))
                _rewrite(path, st, changed)
                done["digests"] += 1
        stale = now_stale
    if stale:
        raise RuntimeError("the digests recorded in %s do not settle: a file records its own digest?" % dest)
    for parent, st in parents.items():
        os.utime(parent, ns=(st.st_atime_ns, st.st_mtime_ns))
    return done


def fingerprint(root):
    """Everything about a tree a copy of it could change: (relative path, type, mode, owner, size, mtime, sha256 of
    the content or the link's target) of each entry."""
    out = []
    for path in _entries(root):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            content = os.fsencode(os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            with open(path, "rb") as handle:
                content = handle.read()
        else:
            content = b""
        out.append((os.path.relpath(path, root), st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns,
                    hashlib.sha256(content).hexdigest()))
    return sorted(out)


def same_length_name(label, length, unique):
    """A directory name of exactly `length` characters: label (cut, or padded with '_') then '-' and unique's
    digits (at least 8 characters are needed)."""
    digits = "%08d" % (unique % 10 ** 8)
    room = length - len(digits) - 1
    if room < 1:
        raise ValueError("a name of %d characters cannot hold a label and 8 digits" % length)
    return "%s-%s" % (label[:room].ljust(room, "_"), digits)
