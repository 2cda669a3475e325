"""CMS formats written here from their definitions, independently of daqflow's C++: FED fragments
with their CRC-16, FEROL blocks, and (later) FRD events. Used by the integration tests to feed
and to read daqflow.

FED fragment (CMSSW DataFormats/FEDRawData fed_header.h, fed_trailer.h): little-endian 64-bit
words; header 0x5 | event type | L1 id (24) | BX id (12) | source id (12) | version | H;
trailer 0xa | length in words (24) | CRC-16 (16) | status bits. CRC-16/CMS: polynomial 0x8005,
initial 0xffff, over every word most significant byte first, the trailer's CRC field and
receiver bits (mask 0xffffc004 of its low half) taken as zero.
"""

import os
import socket
import struct

_CRC_TABLE = []
for _i in range(256):
    _c = _i << 8
    for _ in range(8):
        _c = ((_c << 1) ^ 0x8005) & 0xFFFF if _c & 0x8000 else (_c << 1) & 0xFFFF
    _CRC_TABLE.append(_c)


def fed_crc16(words):
    """CRC-16/CMS over 64-bit words, most significant byte first."""
    crc = 0xFFFF
    table = _CRC_TABLE
    for word in words:
        for byte in word.to_bytes(8, "big"):
            crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ byte]
    return crc


def fed_fragment(source_id, l1_id, payload_words, seed=0):
    """A CMS FED fragment: header, payload, trailer with length and CRC."""
    header = (0x5 << 60) | ((l1_id & 0xFFFFFF) << 32) | ((l1_id % 3564) << 20) | (source_id << 8)
    payload = [(l1_id * 1_000_003 + source_id * 7919 + i * 104_729 + seed) & (2**64 - 1)
               for i in range(payload_words)]
    length = payload_words + 2
    trailer = (0xA << 60) | (length << 32)
    trailer |= fed_crc16([header] + payload + [trailer]) << 16
    return struct.pack(f"<{length}Q", header, *payload, trailer)


FEROL_SIGNATURE = 0x475A
FEROL_MAX_DATA = 4080

# The FEROL header as CMS equipment frames it: two 64-bit words, each sent most significant byte
# first. Per field: the word, its lowest bit and its width. Every other bit is zero.
FEROL_FIELDS = {
    "signature": (0, 48, 16),
    "packet": (0, 32, 11),
    "first": (0, 31, 1),
    "last": (0, 30, 1),
    "words": (0, 0, 10),
    "fed": (1, 32, 12),
    "event": (1, 0, 24),
}


def ferol_header(fields):
    """The 16 header bytes of one block from its fields (a dict naming every key of
    FEROL_FIELDS), bit by bit."""
    words = [0, 0]
    for name, (word, low, width) in FEROL_FIELDS.items():
        value = int(fields[name])
        assert 0 <= value < 1 << width, f"FEROL field {name} = {value} does not fit {width} bits"
        words[word] |= value << low
    return words[0].to_bytes(8, "big") + words[1].to_bytes(8, "big")


def ferol_blocks(fed_id, fragment, block_data=FEROL_MAX_DATA, edit=None):
    """A fragment cut into FEROL blocks of `block_data` bytes (the last one unpadded), each
    behind its header: packet number from 0, first and last flags, the block's data length in
    64-bit words, the FED id and the FED header's L1 id. `edit(index, fields)` may change a
    block's fields (a dict) before it is written."""
    l1_id = (struct.unpack_from("<Q", fragment, 0)[0] >> 32) & 0xFFFFFF
    count = (len(fragment) + block_data - 1) // block_data
    out = bytearray()
    for b in range(count):
        data = fragment[b * block_data:(b + 1) * block_data]
        f = {"signature": FEROL_SIGNATURE, "first": b == 0, "last": b == count - 1,
             "packet": b, "words": len(data) // 8, "fed": fed_id, "event": l1_id}
        if edit:
            edit(b, f)
        out += ferol_header(f)
        out += data
    return bytes(out)


def free_ports(first, last, count):
    """The first of `count` consecutive ports in [first, last], all free on 127.0.0.1."""
    for base in range(first + (os.getpid() % 40) * 10, last - count, count):
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError(f"no free ports in {first}-{last}")


_CRC32C_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data):
    """CRC-32C (Castagnoli, reflected 0x82f63b78, init and final xor 0xffffffff)."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def read_fed_fragments(data):
    """Walks an FRD event's FED data from its end, as CMSSW's FRD source does: each trailer's
    length gives its fragment. Checks the markers and every CRC-16; returns (source id, L1 id)
    per fragment, last first."""
    feds = []
    end = len(data)
    while end > 0:
        trailer = struct.unpack_from("<Q", data, end - 8)[0]
        assert trailer >> 60 == 0xA, f"no FED trailer at byte {end - 8}"
        size = ((trailer >> 32) & 0xFFFFFF) * 8
        assert 16 <= size <= end, f"FED length {size} at byte {end - 8}"
        start = end - size
        words = list(struct.unpack_from(f"<{size // 8}Q", data, start))
        header = words[0]
        assert header >> 60 == 0x5, f"no FED header at byte {start}"
        crc = (trailer >> 16) & 0xFFFF
        words[-1] = trailer & ~0xFFFFC004
        assert fed_crc16(words) == crc, f"FED CRC-16 at byte {start}"
        feds.append(((header >> 8) & 0xFFF, (header >> 32) & 0xFFFFFF))
        end = start
    return feds


def read_frd_file(path):
    """A CMS raw file (FRD file header v1, then FRD v6 events), read from the formats'
    definitions (CMSSW IOPool/Streamer FRDFileHeader.h, FRDEventMessage.h). Returns the header
    fields, the events: (run, lumi, event, FEDs as read_fed_fragments gives them), and each
    event's FED data ("data", in the same order)."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, header_size, count, lumi, file_size = struct.unpack_from("<8sHHIQ", raw, 0)
    assert magic == b"RAW_0001" and header_size == 24, f"{path}: raw file header"
    assert file_size == len(raw), f"{path}: header says {file_size} bytes, file {len(raw)}"
    events = []
    datas = []
    at = 24
    while at < len(raw):
        version, flags, run, ev_lumi, event, size, crc = struct.unpack_from("<HHIIIII", raw, at)
        assert version == 6 and flags == 0, f"{path}: FRD version {version} flags {flags}"
        data = raw[at + 24:at + 24 + size]
        assert len(data) == size, f"{path}: event {event} truncated"
        assert crc32c(data) == crc, f"{path}: event {event} CRC-32C"
        events.append((run, ev_lumi, event, read_fed_fragments(data)))
        datas.append(data)
        at += 24 + size
    assert len(events) == count, f"{path}: header counts {count} events, file holds {len(events)}"
    return {"lumi": lumi, "size": len(raw), "events": events, "data": datas}
