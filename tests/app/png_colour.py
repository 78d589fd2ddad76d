#!/usr/bin/env python3
"""Counts the pixels of a PNG inside a rectangle that are close to a colour.

Independent of the workbench's own code (a plain zlib + PNG-filter decoder), so a screenshot
test does not trust the program it checks. Usage:
  png_colour.py IMAGE.png X0 Y0 X1 Y1 R G B [TOLERANCE]   → prints the count
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise SystemExit(f"{path}: only 8-bit RGB/RGBA non-interlaced PNGs are supported")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main():
    path, x0, y0, x1, y1, r, g, b = sys.argv[1], *map(int, sys.argv[2:9])
    tol = int(sys.argv[9]) if len(sys.argv) > 9 else 24
    width, height, bpp, rows = read_png(path)
    count = 0
    for y in range(max(0, y0), min(height, y1)):
        line = rows[y]
        for x in range(max(0, x0), min(width, x1)):
            p = line[x * bpp:x * bpp + 3]
            if abs(p[0] - r) <= tol and abs(p[1] - g) <= tol and abs(p[2] - b) <= tol:
                count += 1
    print(count)


if __name__ == "__main__":
    main()
