/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model.h - [Marathe]'s protocol execution models, as a replay of one
 * pair's phase: given the calls both ranks made for the messages of one
 * direction (in order, with the compute measured between them), when
 * would each rank have left the phase had every message gone by protocol
 * P?  The models of the paper's Fig. 1-4 are its cases: who arrives
 * first, blocking or not.
 *
 * The replay follows the library's rules: with manual progress a rank
 * moves a transfer only inside its calls (a post, or a wait - also one
 * for another message); a call does its own work first (a pre-copy or
 * post-copy send copies into the staging ring), then every piece of work
 * that is ready (a copy or a CTS whose peer packet arrived, a completion
 * whose FIN arrived), oldest first; a wait returns when its message is
 * complete on that side.  Control packets take hop_ns.
 *
 *   RGET      S posts: RTS.  R copies the message (in a call after the
 *             RTS and its own post), then FIN; S completes on the FIN.
 *   RPUT      S posts: RTS.  R answers with a CTS (in a call after the
 *             RTS and its own post); S copies (in a call after the CTS),
 *             then FIN; R completes on the FIN.  The paper's
 *             receiver-initiated protocol (R's post sends the RTR) saves
 *             that one hop and otherwise behaves alike.
 *   PRECOPY   S's post copies into its own ring and completes; R copies
 *             out of S's ring (in a call after the RTS and its post).
 *   POSTCOPY  S's post copies into R's ring and completes; R copies out
 *             of its own ring likewise.
 * The two differ in who touches the other's memory: a copy within a
 * rank's own memory costs local_ns_per_byte, into or out of the other's
 * remote_ns_per_byte (the paper's local copy and RDMA).
 */
#ifndef COOP_MODEL_H
#define COOP_MODEL_H

#include <stdint.h>

enum coop_model_proto {
	COOP_MODEL_RGET,
	COOP_MODEL_RPUT,
	COOP_MODEL_PRECOPY,
	COOP_MODEL_POSTCOPY,
	COOP_MODEL_COUNT
};

struct coop_model_costs {
	uint64_t call_ns;		/* a call's own cost */
	uint64_t hop_ns;		/* a control packet's way */
	double copy_ns_per_byte;	/* RGET's, RPUT's single copy */
	double local_ns_per_byte;	/* a staging copy in own memory */
	double remote_ns_per_byte;	/* ... into/out of the other's */
};

enum coop_model_op {
	COOP_MODEL_POST,	/* isend / irecv (the start of a blocking call) */
	COOP_MODEL_WAIT,	/* its wait (a blocking call: gap 0 after the post) */
};

struct coop_model_event {
	uint32_t msg;		/* index in the pair's messages */
	uint8_t op;		/* enum coop_model_op */
	uint64_t gap_ns;	/* compute since the previous call ended */
};

/* One direction of a pair in one iteration of a phase. */
struct coop_model_pair {
	const uint64_t *bytes;		/* [nmsg] */
	uint32_t nmsg;
	const struct coop_model_event *send, *recv;	/* each side's calls */
	uint32_t nsend, nrecv;
	uint64_t tail_send, tail_recv;	/* compute after the last call */
};

/*
 * Replay p under proto: the times (ns from the phase's start) at which
 * the sender and the receiver leave the phase (their last call, then
 * their tail of compute).  0, or -1 when the
 * events cannot happen (a wait before its post, a message posted on one
 * side only, a message index out of range, more than COOP_MODEL_MAX
 * messages).
 */
#define COOP_MODEL_MAX 4096
int coop_model_replay(const struct coop_model_costs *c,
		      const struct coop_model_pair *p,
		      enum coop_model_proto proto, uint64_t *end_send,
		      uint64_t *end_recv);

/* The protocol whose replay ends the pair soonest (the later of its two
 * ends; ties: the lower enum value); each protocol's end in ends[] (may
 * be NULL); -1 as above. */
int coop_model_best(const struct coop_model_costs *c,
		    const struct coop_model_pair *p,
		    uint64_t ends[COOP_MODEL_COUNT]);

#endif
