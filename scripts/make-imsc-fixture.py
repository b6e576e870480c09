#!/usr/bin/env python3
"""Writes an IMSC1 (TTML, `stpp.ttml.im1t`) fMP4 rendition: init section + N media segments of one cue each.

ffmpeg 5.1 refuses to fragment TTML ("Fragmentation is not currently supported for TTML in MP4"), and GPAC is not in
Debian 12, so the boxes are written here from ISO/IEC 14496-12 (ftyp, moov/trak/mdia with handler `subt` and an `sthd`
media header, mvex/trex; per segment styp + moof(mfhd, traf(tfhd default-base-is-moof, tfdt v1, trun)) + mdat) and
14496-30 (`stpp` sample entry: namespace http://www.w3.org/ns/ttml, no schema location, no auxiliary MIME types).
Each sample is one IMSC1 Text Profile document whose times are on the track timeline (tfdt).
Usage: scripts/make-imsc-fixture.py OUTPUT_DIR [SEGMENTS] [SEGMENT_SECONDS]
"""
import os
import struct
import sys

TIMESCALE = 1000
TRACK_ID = 1


def box(kind, payload):
    return struct.pack(">I", 8 + len(payload)) + kind.encode("ascii") + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)


def init_section():
    matrix = struct.pack(">9I", 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)
    mvhd = full_box("mvhd", 0, 0, struct.pack(">IIII", 0, 0, TIMESCALE, 0) + struct.pack(">IH", 0x10000, 0x100)
                    + bytes(10) + matrix + bytes(24) + struct.pack(">I", TRACK_ID + 1))
    tkhd = full_box("tkhd", 0, 3, struct.pack(">IIIII", 0, 0, TRACK_ID, 0, 0) + bytes(8)
                    + struct.pack(">hhhH", 0, 0, 0, 0) + matrix + struct.pack(">II", 0, 0))
    language = sum((ord(c) - 0x60) << shift for c, shift in zip("eng", (10, 5, 0)))
    mdhd = full_box("mdhd", 0, 0, struct.pack(">IIIIHH", 0, 0, TIMESCALE, 0, language, 0))
    hdlr = full_box("hdlr", 0, 0, struct.pack(">I", 0) + b"subt" + bytes(12) + b"SubtitleHandler\0")
    dref = full_box("dref", 0, 0, struct.pack(">I", 1) + full_box("url ", 0, 1, b""))
    stpp = box("stpp", bytes(6) + struct.pack(">H", 1) + b"http://www.w3.org/ns/ttml\0" + b"\0" + b"\0")
    stbl = box("stbl", full_box("stsd", 0, 0, struct.pack(">I", 1) + stpp)
               + full_box("stts", 0, 0, struct.pack(">I", 0)) + full_box("stsc", 0, 0, struct.pack(">I", 0))
               + full_box("stsz", 0, 0, struct.pack(">II", 0, 0)) + full_box("stco", 0, 0, struct.pack(">I", 0)))
    minf = box("minf", full_box("sthd", 0, 0, b"") + box("dinf", dref) + stbl)
    trak = box("trak", tkhd + box("mdia", mdhd + hdlr + minf))
    trex = full_box("trex", 0, 0, struct.pack(">IIIII", TRACK_ID, 1, 0, 0, 0))
    ftyp = box("ftyp", b"iso6" + struct.pack(">I", 0) + b"iso6" + b"dash" + b"im1t")
    return ftyp + box("moov", mvhd + trak + box("mvex", trex))


def clock(milliseconds):
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def document(begin, end, text):
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<tt xmlns="http://www.w3.org/ns/ttml" xmlns:ttp="http://www.w3.org/ns/ttml#parameter" '
        'xmlns:tts="http://www.w3.org/ns/ttml#styling" '
        'ttp:profile="http://www.w3.org/ns/ttml/profile/imsc1/text" xml:lang="en">'
        '<head><layout><region xml:id="bottom" tts:origin="10% 80%" tts:extent="80% 15%" '
        'tts:textAlign="center"/></layout></head>'
        f'<body region="bottom"><div><p begin="{clock(begin)}" end="{clock(end)}">{text}</p></div></body></tt>\n'
    ).encode("utf-8")


def segment(sequence, decode_time, duration, body):
    def moof(data_offset):
        tfhd = full_box("tfhd", 0, 0x020000, struct.pack(">I", TRACK_ID))
        tfdt = full_box("tfdt", 1, 0, struct.pack(">Q", decode_time))
        # data-offset, sample-duration, sample-size, sample-flags present; the one sample is a sync sample.
        trun = full_box("trun", 0, 0x000701, struct.pack(">IiIII", 1, data_offset, duration, len(body), 0x02000000))
        return box("moof", full_box("mfhd", 0, 0, struct.pack(">I", sequence)) + box("traf", tfhd + tfdt + trun))

    styp = box("styp", b"msdh" + struct.pack(">I", 0) + b"msdh" + b"msix" + b"im1t")
    size = len(moof(0))
    return styp + moof(size + 8) + box("mdat", body)


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "imsc-init.mp4"), "wb") as file:
        file.write(init_section())
    duration = seconds * TIMESCALE
    for index in range(count):
        start = index * duration
        body = document(start + 500, start + 1500, f"Cue {index + 1}")
        with open(os.path.join(out, f"imsc-{index}.m4s"), "wb") as file:
            file.write(segment(index + 1, start, duration, body))


if __name__ == "__main__":
    main()
