"""Checks the ad-hoc code signature of Mach-O files (what an arm64 Mac insists on before it maps
a page): every page hash of the CodeDirectory must match the file, or the binary is killed on
load. A strip after the link rewrites the file; this says whether the signature was rewritten too.
Usage: python3 macho-signature.py FILE...   Prints one line per file; exit 1 if any is invalid or
unsigned (with --allow-unsigned, an unsigned x86_64 file passes: Intel Macs run those)."""
import hashlib
import struct
import sys

LC_CODE_SIGNATURE = 0x1D
CPU_ARM64 = 0x0100000C


def check(path, allow_unsigned):
    data = open(path, "rb").read()
    magic, cpu, _sub, _ftype, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != 0xFEEDFACF:
        return False, "not a 64-bit little-endian Mach-O file"
    off, sig = 32, None
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, off)
        if cmd == LC_CODE_SIGNATURE:
            sig = struct.unpack_from("<II", data, off + 8)
        off += cmdsize
    if sig is None:
        ok = allow_unsigned and cpu != CPU_ARM64
        return ok, "unsigned" + ("" if ok else " (arm64 needs a signature)")
    dataoff, _datasize = sig
    smagic, _len, count = struct.unpack_from(">III", data, dataoff)
    if smagic != 0xFADE0CC0:
        return False, "bad signature superblob"
    for i in range(count):
        _typ, boff = struct.unpack_from(">II", data, dataoff + 12 + 8 * i)
        base = dataoff + boff
        if struct.unpack_from(">I", data, base)[0] != 0xFADE0C02:
            continue
        (_m, _l, _v, _f, hash_off, _id, _ns, ncode, limit, hsize, htype, _p, pshift) = struct.unpack_from(">IIIIIIIIIBBBB", data, base)
        algo = {1: hashlib.sha1, 2: hashlib.sha256}.get(htype)
        if algo is None:
            return False, f"unknown hash type {htype}"
        page = 1 << pshift
        for n in range(ncode):
            want = data[base + hash_off + n * hsize : base + hash_off + (n + 1) * hsize]
            got = algo(data[n * page : min((n + 1) * page, limit)]).digest()[:hsize]
            if got != want:
                return False, f"page {n} of {ncode} does not match its hash"
        if limit != dataoff:
            return False, f"the signature covers {limit} bytes, the code ends at {dataoff}"
        return True, f"ad-hoc signature valid ({ncode} pages)"
    return False, "no CodeDirectory"


def main():
    args = sys.argv[1:]
    allow = "--allow-unsigned" in args
    bad = 0
    for path in (a for a in args if a != "--allow-unsigned"):
        ok, why = check(path, allow)
        print(f"{path}: {why}")
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
