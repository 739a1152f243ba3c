/*
 * ddlprof trace format, version 1: the one definition shared by the writer
 * (libddlprof) and every reader (analyzer/trace_read.c). man/ddlprof-trace.5
 * is the prose specification of the same bytes.
 *
 * A trace file is one fixed header followed by self-contained chunks, each
 * {magic, type, flags, size, raw_size, crc, hcrc} and a payload. Readers skip
 * chunk types they do not know, so new kinds of records never break old
 * readers. All integers are in the byte order of the writing machine; the
 * header's byte_order field tells a reader which one that was.
 */
#ifndef DDLPROF_TRACE_H
#define DDLPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Versioning rule: bump DDL_FORMAT_VERSION for any change a reader could
 * notice (new chunk type, new flag, a field added at the end of the file
 * header or of the end record, which readers size by header_size and chunk
 * size). Event and clock records are fixed at 32 and 24 bytes: more fields
 * there take a new chunk type. Bump DDL_FORMAT_MIN_READER only when an old
 * reader would misread the new file (a field moved or changed meaning);
 * additions never need it. Readers refuse files whose min_reader is above
 * their own DDL_FORMAT_VERSION and read every older file.
 */
#define DDL_FORMAT_VERSION    1
#define DDL_FORMAT_MIN_READER 1

#define DDL_IDENT             "DDLT"
#define DDL_BYTE_ORDER_MAGIC  0x0A0B0C0Du /* reads as 0x0D0C0B0A on the other order */
#define DDL_CHUNK_MAGIC       0x4B4E4843u /* "CHNK" on little-endian machines */
#define DDL_CHUNK_MAX         (64u << 20) /* no valid chunk payload is larger */
#define DDL_HOST_MAX          64
#define DDL_RUNID_MAX         64

/* Feature bits in the file header: what the writer could produce. */
#define DDL_FEAT_ZSTD   (1u << 0) /* some chunks may be zstd-compressed */
#define DDL_FEAT_SOCKET (1u << 1) /* socket interception was on */

enum ddl_clock_source {
	DDL_CLOCK_MONOTONIC = 1, /* ticks are CLOCK_MONOTONIC nanoseconds */
	DDL_CLOCK_TSC = 2,       /* ticks are the x86 invariant TSC */
};

struct ddl_file_header {
	char ident[4];          /* "DDLT" */
	uint32_t byte_order;    /* DDL_BYTE_ORDER_MAGIC, native order */
	uint16_t version;       /* DDL_FORMAT_VERSION of the writer */
	uint16_t min_reader;    /* oldest reader version able to read this */
	uint32_t header_size;   /* bytes from file start to the first chunk */
	uint64_t features;      /* DDL_FEAT_* */
	uint32_t pid;
	uint32_t ppid;
	int32_t rank;           /* -1 when unknown */
	int32_t world_size;     /* -1 when unknown */
	int32_t local_rank;     /* -1 when unknown */
	uint32_t clock_source;  /* enum ddl_clock_source */
	uint64_t tick_hz;       /* nominal tick rate; sync samples are authoritative */
	uint64_t start_ticks;   /* first clock-sync sample: ticks ... */
	int64_t start_mono_ns;  /* ... CLOCK_MONOTONIC at the same instant ... */
	int64_t start_real_ns;  /* ... and CLOCK_REALTIME */
	uint32_t exec_gen;      /* file number for this host and pid: 0 first, then
	                         * 1, 2, ... for later images (exec) or reused pids */
	uint32_t reserved;
	char host[DDL_HOST_MAX];    /* hostname, NUL-padded */
	char run_id[DDL_RUNID_MAX]; /* job id shared by all ranks, NUL-padded */
	uint32_t pad;
	uint32_t hcrc;          /* CRC32C of the header_size - 4 bytes before it */
};

enum ddl_chunk_type {
	DDL_CHUNK_EVENTS = 1,   /* array of struct ddl_event */
	DDL_CHUNK_STRINGS = 2,  /* struct ddl_strrec, each followed by its text */
	DDL_CHUNK_CLOCK = 3,    /* array of struct ddl_clock_sample */
	DDL_CHUNK_END = 4,      /* struct ddl_end: written on a clean close */
	DDL_CHUNK_EXEC = 5,     /* struct ddl_end: the image called exec */
};

#define DDL_CHUNKF_ZSTD 1u /* payload is one zstd frame of raw_size bytes */

struct ddl_chunk {
	uint32_t magic;    /* DDL_CHUNK_MAGIC */
	uint16_t type;     /* enum ddl_chunk_type; unknown types are skipped */
	uint16_t flags;    /* DDL_CHUNKF_* */
	uint32_t size;     /* payload bytes stored after this header */
	uint32_t raw_size; /* payload bytes once decompressed */
	uint32_t crc;      /* CRC32C of the stored payload */
	uint32_t hcrc;     /* CRC32C of the 20 bytes above */
};

/*
 * Event kinds. X(NAME, "name", class): class tells the analyzer what the
 * call does with bytes. Append only; the numeric value is the position.
 */
enum ddl_class {
	DDL_CLASS_TX = 1, DDL_CLASS_RX, DDL_CLASS_WAIT, DDL_CLASS_CONN, DDL_CLASS_MARK,
	DDL_CLASS_SYNC, /* a thread waiting on another (condition variables) */
};

#define DDL_EVENT_KINDS(X) \
	X(SEND, "send", DDL_CLASS_TX) \
	X(SENDTO, "sendto", DDL_CLASS_TX) \
	X(SENDMSG, "sendmsg", DDL_CLASS_TX) \
	X(SENDMMSG, "sendmmsg", DDL_CLASS_TX) \
	X(RECV, "recv", DDL_CLASS_RX) \
	X(RECVFROM, "recvfrom", DDL_CLASS_RX) \
	X(RECVMSG, "recvmsg", DDL_CLASS_RX) \
	X(RECVMMSG, "recvmmsg", DDL_CLASS_RX) \
	X(READ, "read", DDL_CLASS_RX) \
	X(WRITE, "write", DDL_CLASS_TX) \
	X(READV, "readv", DDL_CLASS_RX) \
	X(WRITEV, "writev", DDL_CLASS_TX) \
	X(CONNECT, "connect", DDL_CLASS_CONN) \
	X(ACCEPT, "accept", DDL_CLASS_CONN) \
	X(ACCEPT4, "accept4", DDL_CLASS_CONN) \
	X(POLL, "poll", DDL_CLASS_WAIT) \
	X(PPOLL, "ppoll", DDL_CLASS_WAIT) \
	X(SELECT, "select", DDL_CLASS_WAIT) \
	X(PSELECT, "pselect", DDL_CLASS_WAIT) \
	X(EPOLL_WAIT, "epoll_wait", DDL_CLASS_WAIT) \
	X(EPOLL_PWAIT, "epoll_pwait", DDL_CLASS_WAIT) \
	X(RANGE_PUSH, "range_push", DDL_CLASS_MARK) \
	X(RANGE_POP, "range_pop", DDL_CLASS_MARK) \
	X(MARK, "mark", DDL_CLASS_MARK) \
	X(COND_WAIT, "cond_wait", DDL_CLASS_SYNC) \
	X(COND_TIMEDWAIT, "cond_timedwait", DDL_CLASS_SYNC) \
	X(COND_CLOCKWAIT, "cond_clockwait", DDL_CLASS_SYNC)

enum ddl_event_kind {
	DDL_EV_NONE = 0,
#define DDL_X_ENUM(n, s, c) DDL_EV_##n,
	DDL_EVENT_KINDS(DDL_X_ENUM)
#undef DDL_X_ENUM
	DDL_EV_COUNT
};

/* Event flags. */
#define DDL_EVF_LONG     0x01u /* dur is in units of 2^16 ticks */
#define DDL_EVF_SOCKWAIT 0x02u /* a wait that included a socket */
#define DDL_EVF_PEEK     0x04u /* MSG_PEEK: data looked at, not consumed */
#define DDL_DUR_LONG_SHIFT 16

/*
 * One intercepted call, 32 bytes. result is bytes moved for data calls,
 * the return value for waits and accept, 0 for connect, or -errno.
 * Marker events (ddlprof.h) have dur 0, result the name's DDL_STR_NAME id
 * (0 for range_pop) and fd -1.
 * fd is the descriptor, except: poll/ppoll, the number of descriptors;
 * select/pselect, nfds (highest descriptor + 1); epoll waits, the epoll
 * descriptor; accept, the listening socket (the new one is in result).
 */
struct ddl_event {
	uint64_t start; /* ticks, see clock_source */
	uint32_t dur;   /* ticks, or 2^16-tick units with DDL_EVF_LONG */
	uint8_t kind;   /* enum ddl_event_kind */
	uint8_t flags;  /* DDL_EVF_* */
	uint16_t tid;   /* thread index within the process (DDL_STR_THREAD) */
	int64_t result;
	int32_t fd;
	uint32_t peer;  /* peer index (DDL_STR_PEER), 0 = unknown */
};

/* String records: {id, kind, len, value} then len bytes of text, no NUL. */
enum ddl_str_kind {
	DDL_STR_PEER = 1,   /* id = peer index; value = DDL_PEERF_* | family << 8 */
	DDL_STR_THREAD = 2, /* id = thread index; value = OS thread id; text = name */
	DDL_STR_META = 3,   /* id = sequence; text = "key=value" */
	DDL_STR_NAME = 4,   /* id = marker name id; text = the name */
};

#define DDL_PEERF_LOCAL 0x01u /* the peer is on this host */

struct ddl_strrec {
	uint32_t id;
	uint16_t kind;
	uint16_t len;
	uint32_t value;
};

/* A tick reading and the wall clocks at the same instant. */
struct ddl_clock_sample {
	uint64_t ticks;
	int64_t mono_ns;
	int64_t real_ns;
};

enum ddl_end_reason {
	DDL_END_EXIT = 1,   /* normal exit, destructor ran */
	DDL_END_EXEC = 2,   /* image replaced by exec (DDL_CHUNK_EXEC) */
	DDL_END_SIGNAL = 3, /* fatal signal; value = signal number */
	DDL_END_UEXIT = 4,  /* _exit; value = status */
};

struct ddl_end {
	uint64_t events;  /* events written to this file */
	uint64_t dropped; /* events lost because a buffer was full */
	uint32_t reason;  /* enum ddl_end_reason */
	int32_t value;
};

_Static_assert(sizeof(struct ddl_event) == 32, "event record is 32 bytes");
_Static_assert(sizeof(struct ddl_chunk) == 24, "chunk header is 24 bytes");
_Static_assert(sizeof(struct ddl_strrec) == 12, "string record head is 12 bytes");
_Static_assert(sizeof(struct ddl_file_header) % 8 == 0, "header is 8-byte aligned");

#endif
