#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the generic netlink uAPI against its YNL spec; any difference fails:
#   1. Documentation/netlink/specs/visock.yaml validates against the
#      kernel's schema (Documentation/netlink/genetlink-legacy.yaml of
#      Debian's linux-source-6.12, through python3-jsonschema);
#   2. the kernel's YNL C generator (tools/net/ynl/ynl-gen-c.py) in uapi
#      mode renders include/uapi/linux/visock_genl.h byte for byte;
#   3. the enums the spec takes from other headers (the "header:"
#      definitions: fallback reasons, link states) have the spec's names
#      and values there, checked by compiling static assertions.
# A checker that cannot be found is a failure, not a skip.  python3-yaml
# and python3-jsonschema are installed from Debian if missing.
#
# Regenerate the header after changing the spec:
#   tools/testing/ynl-check.sh --regen
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1

SPEC=Documentation/netlink/specs/visock.yaml
HDR=include/uapi/linux/visock_genl.h
regen=0
[ "${1:-}" = --regen ] && regen=1

die() {
	echo "ynl-check: $*"
	echo "ynl-check: FAILED"
	exit 1
}

SRC=$("$ROOT/tools/testing/linux-source.sh") || die "no kernel tree (tools/testing/linux-source.sh)"
GEN=
for c in "$SRC/tools/net/ynl/pyynl/ynl_gen_c.py" "$SRC/tools/net/ynl/ynl-gen-c.py"; do
	[ -f "$c" ] && GEN=$c && break
done
[ -n "$GEN" ] || die "the kernel's YNL generator is missing in $SRC/tools/net/ynl"
SCHEMA_DIR=$SRC/Documentation/netlink
[ -f "$SCHEMA_DIR/genetlink-legacy.yaml" ] || die "$SCHEMA_DIR/genetlink-legacy.yaml is missing"
[ -f "$SPEC" ] || die "$SPEC is missing"
command -v python3 >/dev/null || die "python3 not found"
CC=${CC:-cc}
command -v "$CC" >/dev/null || die "no C compiler ($CC)"

if ! python3 -c 'import yaml, jsonschema' 2>/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "ynl-check: installing python3-yaml python3-jsonschema" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends python3-yaml python3-jsonschema >&2
	fi
	python3 -c 'import yaml, jsonschema' 2>/dev/null ||
		die "python3-yaml and python3-jsonschema are needed"
fi

TMP=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

# The generator validates the spec against ../<protocol>.yaml next to its
# directory and names the spec relative to the nearest MAINTAINERS: give
# it a tree shaped like the kernel's.
mkdir -p "$TMP/Documentation/netlink/specs" || die "mkdir failed"
cp "$SCHEMA_DIR"/genetlink*.yaml "$TMP/Documentation/netlink/" || die "cp failed"
cp "$SPEC" "$TMP/$SPEC" || die "cp failed"
: >"$TMP/MAINTAINERS"

# 1. Schema, explicitly (the protocol's schema, as the generator picks it).
python3 - "$TMP/$SPEC" "$TMP/Documentation/netlink" <<'EOF' || die "$SPEC does not validate"
import sys, yaml, jsonschema
spec = yaml.safe_load(open(sys.argv[1]))
proto = spec.get('protocol', 'genetlink')
schema = yaml.safe_load(open(f'{sys.argv[2]}/{proto}.yaml'))
jsonschema.validate(spec, schema)
print(f'ynl-check: {sys.argv[1].split("/")[-1]} validates against {proto}.yaml')
EOF

# 2. Generate the uAPI header.  The 6.12 generator has no C type for
# indexed arrays of scalars (stats-a-fallback); uapi mode only needs the
# attribute's name and value, so such an attribute is given the binary
# type when the generator has nothing better.
python3 - "$GEN" --mode uapi --header --spec "$TMP/$SPEC" \
	-o "$TMP/visock_genl.h" <<'EOF' || die "the generator failed"
import importlib.util, os, sys
gen_path = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(gen_path)))
spec = importlib.util.spec_from_file_location('ynl_gen_c', gen_path)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
new_attr = gen.AttrSet.new_attr
def new_attr_scalar_array(self, elem, value):
    try:
        return new_attr(self, elem, value)
    except Exception:
        if elem['type'] != 'indexed-array' or elem.get('sub-type') == 'nest':
            raise
        return gen.TypeBinary(self.family, self, elem, value)
gen.AttrSet.new_attr = new_attr_scalar_array
sys.argv = [gen_path] + sys.argv[2:]
gen.main()
EOF
[ -s "$TMP/visock_genl.h" ] || die "the generator wrote nothing"

if [ "$regen" = 1 ]; then
	cp "$TMP/visock_genl.h" "$HDR" || die "cannot write $HDR"
	echo "ynl-check: wrote $HDR"
fi
if ! diff -u "$HDR" "$TMP/visock_genl.h"; then
	die "$HDR differs from what $SPEC generates (above; tools/testing/ynl-check.sh --regen)"
fi
echo "ynl-check: $HDR is what $(basename "$GEN") generates from $SPEC"

# 3. Definitions that live in other uAPI headers.
python3 - "$TMP/$SPEC" >"$TMP/defs.c" <<'EOF' || die "cannot read the definitions"
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
fam = spec['name']
heads, asserts = [], []
for d in spec.get('definitions', []):
    if 'header' not in d or d['type'] not in ('enum', 'flags'):
        continue
    if d['header'] not in heads:
        heads.append(d['header'])
    pfx = d.get('name-prefix', f"{fam}-{d['name']}-")
    val = d.get('value-start', 0)
    for e in d['entries']:
        if isinstance(e, dict):
            name, val = e['name'], e.get('value', val)
        else:
            name = e
        c = (pfx + name).upper().replace('-', '_')
        v = val if d['type'] == 'enum' else 1 << val
        asserts.append(f'_Static_assert({c} == {v}, "{c} is not {v}");')
        val += 1
    if d['type'] == 'enum' and 'enum-name' in d and d['enum-name']:
        ename = d['enum-name'].replace('-', '_')
        asserts.append(f'_Static_assert(sizeof(enum {ename}) > 0, "no enum {ename}");')
for h in heads:
    print(f'#include <{h}>')
print('\n'.join(asserts))
print(f'/* {len(asserts)} assertions */')
EOF
n=$(sed -n 's|^/\* \([0-9]*\) assertions \*/$|\1|p' "$TMP/defs.c")
[ "${n:-0}" -gt 0 ] || die "no definitions from other headers found in $SPEC"
"$CC" -std=gnu11 -Wall -Werror -fsyntax-only -I include/uapi "$TMP/defs.c" ||
	die "the enums named in $SPEC's header: definitions differ (above)"
echo "ynl-check: $n names and values of other uAPI headers match $SPEC"
echo "ynl-check: OK"
