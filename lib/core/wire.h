/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wire.h - control packets of the protocol engine.  Every packet is one
 * COOPMPI_MSG_SIZE (64-byte) mailbox message: a 16-byte header and a
 * type-specific body.  An Env+D message may go on in up to three more
 * messages enqueued with it in consecutive slots (a span: the header's
 * PF_SPAN bits count them), so 240 bytes travel without a bounce slot.
 * Provider-neutral: the same bytes travel through the shm rings and the
 * driver's mailboxes.
 */
#ifndef COOP_WIRE_H
#define COOP_WIRE_H

#include <stdint.h>

#include "coopmpi.h"
#include "coopmpi_uapi.h"
#include "provider.h"

/*
 * The packets' layout and meaning, and how they travel.  Ranks with
 * another refuse to connect (api/ctx.c), as a peer's packets would not
 * mean what they say or not reach it: 0 was every library before it had
 * one, 2 has spans (PF_SPAN), 3 the shm provider's fast boxes.
 */
#define COOP_WIRE_VERSION 3

enum coop_pkt_type {
	PKT_EAGER = 1,		/* Env+D: envelope and inline data */
	PKT_EAGER_BB,		/* envelope + bounce slot holding the data */
	PKT_RTS,		/* sender -> receiver: ready to send */
	PKT_CTS,		/* receiver -> sender: clear to send */
	PKT_RTR,		/* receiver -> sender: ready to receive */
	PKT_FIN,		/* copy finished (+ completion data) */
	PKT_ACK,		/* synchronous eager send matched */
	PKT_FRAG,		/* bounce pipeline fragment */
	PKT_REVOKE,		/* receiver cancels an RTR */
	PKT_REVOKE_REPLY,	/* sender's answer to REVOKE */
	PKT_BYE,		/* the sender finalized: a clean exit */
	PKT_USER,		/* coop_msg_send(): the application's bytes */
	PKT_USER_DATA,		/* coop_msg_buf_send(): header + bounce slot */
	PKT_WAKE,		/* to ourselves: wakes our progress thread */
	PKT_TYPE_MAX
};

/* Header flags */
#define PF_SYNC		0x01	/* synchronous send: receiver must ACK */
#define PF_BLOCKING	0x02	/* the peer blocks on this request */
#define PF_RTS_SENT	0x04	/* FIN: the sender also sent an RTS */
#define PF_LAST		0x08	/* FRAG: last fragment */
#define PF_BUFFERED	0x10	/* RTS: a buffered send (Table II row Bsend) */
#define PF_ENGINE	0x20	/* RTS: the sender has a usable offload engine */
/* Any packet: how many messages follow it in its span (0..3) */
#define PF_SPAN_SHIFT	6
#define PF_SPAN_MASK	0xc0
#define PKT_SPAN_MAX	4	/* messages in one span */

/* Rendezvous protocols carried in RTS/CTS. */
enum coop_proto {
	PROTO_NONE = 0,
	PROTO_RGET,	/* receiver copies all (reads) */
	PROTO_RPUT,	/* sender copies all (writes) after CTS */
	PROTO_COOP,	/* both copy: chunks from a shared work counter */
	PROTO_BOUNCE,	/* no single copy: sender pipelines bounce slots */
	PROTO_RTR,	/* receiver initiated: sender writes after RTR */
	PROTO_DMA,	/* RPUT by the offload engine, notification ends it */
	PROTO_STRIPE,	/* RPUT striped: sender's CPU + offload engine */
	PROTO_EAGER,	/* request state only: moved eagerly */
	PROTO_AUTO,	/* RTS only: the receiver decides (COOP-hybrid) */
	PROTO_PRECOPY,	/* sender staged it in its outbox, completed */
	PROTO_POSTCOPY,	/* sender staged it in our inbox, completed */
	PROTO_COUNT
};

/* enum coop_proto and the public enum coop_protocol agree up to EAGER */
_Static_assert((int)PROTO_EAGER == (int)COOP_PROTOCOL_EAGER, "protocols");

struct coop_pkt_hdr {
	uint8_t type;
	uint8_t flags;
	uint8_t ilen;		/* EAGER: inline payload length */
	uint8_t proto;		/* RTS/CTS: enum coop_proto */
	uint16_t src;		/* sender's rank */
	uint16_t comm;		/* context id */
	int32_t tag;
	uint32_t seq;		/* RTR mode: per (comm, peer, tag) ticket */
};

#define PKT_BODY (COOPMPI_MSG_SIZE - sizeof(struct coop_pkt_hdr))
#define PKT_INLINE_MAX PKT_BODY			/* 48 */
#define PKT_INLINE_SYNC_MAX (PKT_BODY - 4)	/* sreq id comes first */
/* Env+D in a full span: 240 (236 synchronous) */
#define PKT_SPAN_INLINE_MAX \
	(PKT_INLINE_MAX + (PKT_SPAN_MAX - 1) * COOPMPI_MSG_SIZE)

struct coop_pkt_eager {
	struct coop_pkt_hdr h;
	uint8_t data[PKT_BODY];	/* SYNC: u32 sreq, then data */
};

struct coop_pkt_eager_bb {
	struct coop_pkt_hdr h;
	uint32_t slot;		/* index in the sender's bounce pool */
	uint32_t sreq;		/* SYNC: sender request id */
	uint64_t len;
};

/* A message with a payload in one of the sender's bounce slots; the
 * header's ilen is the length of hdr. */
struct coop_pkt_user_data {
	struct coop_pkt_hdr h;
	uint32_t slot;
	uint32_t len;
	uint8_t hdr[PKT_BODY - 8];
};

struct coop_pkt_rts {
	struct coop_pkt_hdr h;
	uint32_t sreq;
	uint32_t pad;
	uint64_t len;
	struct coop_rkey key;	/* the send buffer */
};

struct coop_pkt_cts {
	struct coop_pkt_hdr h;
	uint32_t sreq;		/* target: the send request */
	uint32_t rreq;
	uint64_t len;		/* bytes to move: min(message, buffer) */
	struct coop_rkey key;	/* the receive buffer */
	uint32_t slot;		/* COOP: work slot in receiver's segment */
	uint32_t chunk;		/* COOP: chunk size */
	uint64_t ncookie;	/* DMA: cookie of the receiver's notification
				 * area; slot = notification index in it */
};

struct coop_pkt_rtr {
	struct coop_pkt_hdr h;	/* comm/tag/src = receive's envelope */
	uint32_t rreq;
	uint32_t pad;
	uint64_t cap;
	struct coop_rkey key;	/* the receive buffer */
};

#define FIN_NONE 0xffffffffU

struct coop_pkt_fin {
	struct coop_pkt_hdr h;	/* tag: message tag (RTR completion data) */
	uint32_t req;		/* target request id, or FIN_NONE */
	int32_t err;		/* COOP_SUCCESS or error of the sender side */
	uint64_t len;		/* full message length */
	uint64_t copied;	/* bytes this side copied */
	uint32_t slot;		/* COOP: receiver's work slot to free, or
				 * FIN_NONE */
	uint32_t pad;
};

struct coop_pkt_ack {
	struct coop_pkt_hdr h;
	uint32_t sreq;
};

struct coop_pkt_frag {
	struct coop_pkt_hdr h;
	uint32_t rreq;
	uint32_t slot;
	uint64_t off;
	uint64_t len;
	uint64_t total;		/* full message length */
};

struct coop_pkt_revoke {
	struct coop_pkt_hdr h;	/* comm/tag/src/seq: the RTR to revoke */
	uint32_t rreq;
	uint32_t ok;		/* REPLY: 1 revoked, 0 too late */
};

union coop_pkt {
	struct coop_pkt_hdr h;
	struct coop_pkt_eager eager;
	struct coop_pkt_eager_bb bb;
	struct coop_pkt_user_data udata;
	struct coop_pkt_rts rts;
	struct coop_pkt_cts cts;
	struct coop_pkt_rtr rtr;
	struct coop_pkt_fin fin;
	struct coop_pkt_ack ack;
	struct coop_pkt_frag frag;
	struct coop_pkt_revoke revoke;
	unsigned char raw[COOPMPI_MSG_SIZE];
} __attribute__((aligned(64)));

/* Messages of pkt's span after it (the header says). */
static inline unsigned coop_pkt_span_more(const union coop_pkt *pkt)
{
	return (pkt->h.flags & PF_SPAN_MASK) >> PF_SPAN_SHIFT;
}

/* Where an Env+D packet's bytes go: the body of its first message, then
 * on across the span (pkt points into an array of PKT_SPAN_MAX). */
static inline uint8_t *coop_pkt_inline(union coop_pkt *pkt)
{
	return (uint8_t *)pkt + sizeof(struct coop_pkt_hdr);
}

_Static_assert(sizeof(struct coop_pkt_hdr) == 16, "header is 16 bytes");
_Static_assert(PKT_SPAN_INLINE_MAX <= UINT8_MAX, "ilen holds a span's");
_Static_assert(PKT_SPAN_MAX - 1 <= PF_SPAN_MASK >> PF_SPAN_SHIFT, "span");
_Static_assert(sizeof(union coop_pkt) == COOPMPI_MSG_SIZE, "one message");
_Static_assert(sizeof(struct coop_pkt_cts) <= COOPMPI_MSG_SIZE, "cts fits");
_Static_assert(sizeof(struct coop_pkt_frag) <= COOPMPI_MSG_SIZE, "frag fits");
_Static_assert(sizeof(struct coop_pkt_fin) <= COOPMPI_MSG_SIZE, "fin fits");

#endif
