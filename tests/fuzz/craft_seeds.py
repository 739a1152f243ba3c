#!/usr/bin/env python3
"""Writes the crafted trace seeds of tests/fuzz/seeds: files no writer makes,
with every checksum right, at the edges the reader must survive. Run from
the repository root; the seeds are kept in git, this says how they were made.

  clock-extremes.ddlt   the CI crash class: clock samples ticks far apart
                        with mono_ns at the int64 limits, events at tick 0
                        and 2^64-1 with the longest durations
  clock-backwards.ddlt  a TSC file whose samples run backwards and whose
                        mono_ns disagree with the nominal rate
"""
import struct

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF

I64MIN, I64MAX, U64MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1

def header(clock_source, tick_hz, start):
    ticks, mono, real = start
    h = struct.pack('<4sIHHIQIIiiiIQQqqII64s64sI', b'DDLT', 0x0A0B0C0D, 3, 1, 224, 0,
                    4242, 1, 0, 2, 0, clock_source, tick_hz, ticks, mono, real, 0, 0,
                    b'crafted', b'crafted-1', 0)
    return h + struct.pack('<I', crc32c(h))

def chunk(ctype, payload):
    head = struct.pack('<IHHIII', 0x4B4E4843, ctype, 0, len(payload), len(payload),
                       crc32c(payload))
    return head + struct.pack('<I', crc32c(head)) + payload

def event(start, dur, kind, flags=0, tid=0, result=0, fd=-1, peer=0):
    return struct.pack('<QIBBHqiI', start, dur, kind, flags, tid, result, fd, peer)

def strrec(sid, kind, value, text):
    return struct.pack('<IHHI', sid, kind, len(text), value) + text

def end():
    return chunk(4, struct.pack('<QQIi', 3, 0, 1, 0))

SEND, MARK, RANGE_PUSH, LONG = 1, 24, 22, 1

def clock_extremes():
    start = (1000, 0, 1767225600000000000)
    samples = [(0, I64MIN, I64MIN), (U64MAX, I64MAX, I64MAX), (1 << 63, I64MAX - 1, 0),
               (1, I64MIN + 1, I64MAX)]
    clk = b''.join(struct.pack('<Qqq', *s) for s in samples)
    ev = (event(0, 0xFFFFFFFF, SEND, LONG, result=I64MAX, fd=3, peer=1) +
          event(U64MAX, 0xFFFFFFFF, SEND, LONG, result=I64MIN, fd=3, peer=1) +
          event(1 << 63, 1, RANGE_PUSH, result=1) +
          event(U64MAX - 1, 0, MARK, result=1))
    strs = strrec(1, 1, 2 << 8, b'10.0.0.2:29500') + strrec(1, 4, 0, b'step')
    return (header(2, 3000000000, start) + chunk(3, clk) + chunk(2, strs) + chunk(1, ev) +
            end())

def clock_backwards():
    start = (10 ** 15, 10 ** 9, 1767225600000000000)
    samples = [(10 ** 15 + 3 * 10 ** 12, 10 ** 9 + 10 ** 12, 1767225600000000000),
               (10 ** 13, 10 ** 9, 1767225600000000000),
               (10 ** 15 + 6 * 10 ** 12, I64MAX, 0)]
    clk = b''.join(struct.pack('<Qqq', *s) for s in samples)
    ev = event(10 ** 15 + 10 ** 9, 1000, SEND, fd=3, peer=1)
    return header(2, 3000000000, start) + chunk(3, clk) + chunk(1, ev) + end()

for name, data in (('clock-extremes', clock_extremes()), ('clock-backwards', clock_backwards())):
    with open('tests/fuzz/seeds/%s.ddlt' % name, 'wb') as f:
        f.write(data)
