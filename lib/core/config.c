/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.c - the configuration table: every environment variable of the
 * library with its type, default, range and documentation, in one place
 * (as UCX's ucs_config_field_t tables).  coop_config_load() fills struct
 * coop_config from it; coop_config_print() prints it (lib/coop_info,
 * COOP_VERBOSE=2), so the documentation cannot drift from the code.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coopmpi.h"
#include "config.h"
#include "provider.h"

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define TIB (1ULL << 40)

/* CFG_HEX: 64 bits in hex digits, as scripts/cooprun writes COOP_JOB */
enum cfg_type {
	CFG_SIZE, CFG_UINT, CFG_MS, CFG_RATIO, CFG_ENUM, CFG_TEXT, CFG_HEX,
};

/* cfg_entry.flags */
#define CFG_AGREE 1	/* all ranks must have the same value */
#define CFG_POW2 2	/* a power of two >= 4, or 0 when the range has it:
			 * the shm provider masks ring and box positions */

/* An enumerated setting's words and the value each one stores. */
struct cfg_word {
	const char *word;
	int value;
};

struct cfg_entry {
	const char *name;
	enum cfg_type type;
	size_t offset;		/* of the field in its section's struct */
	const char *def;	/* default, as a user writes it; NULL: none */
	uint64_t lo, hi;	/* SIZE, UINT, MS: accepted range */
	const struct cfg_word *words;	/* ENUM, NULL-terminated */
	unsigned flags;		/* CFG_AGREE, CFG_POW2 */
	const char *doc;
};

#define FIELD(f) offsetof(struct coop_config, f)
#define BOOT(f) offsetof(struct coop_boot_env, f)

static const struct cfg_word order_words[] = {
	{ "color", 1 }, { "list", 0 }, { NULL, 0 },
};

static const struct cfg_word rtr_words[] = {
	{ "direct", 0 }, { "tree", 1 }, { NULL, 0 },
};

static const struct cfg_word rndv_words[] = {
	{ "auto", COOP_RNDV_AUTO }, { "rget", COOP_RNDV_RGET },
	{ "rput", COOP_RNDV_RPUT }, { "rtr", COOP_RNDV_RTR },
	{ "coop", COOP_RNDV_COOP }, { "dma", COOP_RNDV_DMA },
	{ "stripe", COOP_RNDV_STRIPE }, { "precopy", COOP_RNDV_PRECOPY },
	{ "postcopy", COOP_RNDV_POSTCOPY }, { "profile", COOP_RNDV_PROFILE },
	{ NULL, 0 },
};

static const struct cfg_word cma_words[] = {
	{ "auto", 0 }, { "on", 0 }, { "off", 1 }, { "0", 1 }, { NULL, 0 },
};

static const struct cfg_word bool_words[] = {
	{ "0", 0 }, { "1", 1 }, { NULL, 0 },
};

static const struct cfg_word threads_words[] = {
	{ "serialized", 0 }, { "multiple", 1 }, { NULL, 0 },
};

static const struct cfg_word progress_words[] = {
	{ "manual", COOP_PROGRESS_MODE_MANUAL },
	{ "thread", COOP_PROGRESS_MODE_THREAD },
	{ "thread-sleep", COOP_PROGRESS_MODE_SLEEP }, { NULL, 0 },
};

/* a CFG_UINT's words beside its numbers */
static const struct cfg_word cpu_words[] = {
	{ "none", (int)COOP_CPU_NONE }, { NULL, 0 },
};

static const struct cfg_word engine_words[] = {
	{ "dma", COOP_ENGINE_PROVIDER }, { "hca", COOP_ENGINE_HCA },
	{ NULL, 0 },
};

static const struct cfg_word gid_words[] = {
	{ "auto", (int)COOP_GID_AUTO }, { NULL, 0 },
};

static const struct cfg_word provider_words[] = {
	{ "any", COOP_PROVIDER_ANY }, { "kmod", COOP_PROVIDER_KMOD },
	{ "shm", COOP_PROVIDER_SHM }, { NULL, 0 },
};

static const struct cfg_entry table[] = {
	{ "COOP_PROVIDER", CFG_ENUM, FIELD(provider), "any", 0, 0,
	  provider_words, 0,
	  "transport provider: kmod (the coopmpi driver, /dev/coopmpi), shm "
	  "(shared-memory rings + process_vm_readv/writev) or any (kmod when "
	  "/dev/coopmpi exists, else shm); a forced one that cannot open is "
	  "an error" },
	{ "COOP_VERBOSE", CFG_UINT, FIELD(verbose), "0", 0, 2, NULL, 0,
	  "1: one line on stderr for each decision worth knowing (provider "
	  "and why, settings, protocol fallbacks, failures); 2: also this "
	  "table with the values in effect, at coop_init (rank 0)" },
	{ "COOP_WARN_FALLBACK", CFG_ENUM, FIELD(warn_fallback), "1", 0, 0,
	  bool_words, 0,
	  "1: one line on stderr (from rank 0, or from the rank a limit "
	  "stops) when the library runs on the shm provider because it "
	  "cannot use /dev/coopmpi - a note when the module is not loaded, a "
	  "warning naming the cause and its fix for a permission problem, an "
	  "ABI mismatch or a limit; 0: silent" },
	{ "COOP_WARN_SETTINGS", CFG_ENUM, FIELD(warn_settings), "1", 0, 0,
	  bool_words, 0,
	  "1: a line on stderr for each COOP_ variable of the environment "
	  "that is neither a setting nor one that coopmpi's scripts and "
	  "tests use (misspelled?), and for each old name of a setting, once "
	  "per process, at the first coop_init that finds it; 0: silent" },
	{ "COOP_EAGER_MAX", CFG_SIZE, FIELD(eager_max), "64k", 0, MIB, NULL,
	  CFG_AGREE,
	  "largest message sent eagerly through a bounce buffer (messages of "
	  "<= 48 bytes always go inline; 0: only inline eager); costs "
	  "COOP_BOUNCE_SLOTS slots of max(this, 64 KiB) of shared memory per "
	  "rank" },
	{ "COOP_RNDV", CFG_ENUM, FIELD(rndv), "auto", 0, 0, rndv_words,
	  CFG_AGREE,
	  "rendezvous protocol: auto (COOP-hybrid: the receiver chooses per "
	  "message from the calls' blocking and the ranks' copy loads), "
	  "rget, rput, rtr (receiver initiated), coop (COOP-p2p: both copy), "
	  "dma (RPUT by the offload engine; RPUT without one), stripe (the "
	  "sender's CPU and its offload engine share the copy), precopy (the "
	  "sender copies into its staging area and completes, the receiver "
	  "copies out) or postcopy (the sender copies into the receiver's "
	  "staging area and completes, the receiver copies out): both RGET "
	  "when the area is full and for synchronous sends; profile: in the "
	  "phases coop_pcontrol() marks, each destination gets the one of "
	  "rget, rput, precopy and postcopy its last iteration's profile "
	  "predicts best (RGET until there is one, and outside phases)" },
	{ "COOP_HYBRID_MIN", CFG_SIZE, FIELD(hybrid_min), "64k", 0, TIB, NULL,
	  CFG_AGREE,
	  "auto mode (COOP-hybrid): smaller rendezvous messages are RGET, "
	  "larger ones the receiver chooses for" },
	{ "COOP_CHUNK", CFG_SIZE, FIELD(chunk), "4m", 4 * KIB, GIB, NULL, 0,
	  "COOP-chunked: the largest copy done without looking at the "
	  "mailbox (single-sided copies use chunks of this size, COOP-p2p "
	  "an eighth of the message within 128 KiB..this)" },
	{ "COOP_LOAD_HISTORY_MS", CFG_MS, FIELD(load_history_ns), "50", 0,
	  3600000, NULL, 0,
	  "COOP-load: milliseconds in which a rank's recent copy bytes halve "
	  "(its load = pending copy bytes + that history); 0: pending bytes "
	  "only" },
	{ "COOP_LOAD_BUSY_MS", CFG_MS, FIELD(load_busy_ns), "1", 0,
	  3600000, NULL, 0,
	  "COOP-p2p: a rank that started or ended a copy of its own while its "
	  "peer copied for itself too (both ranks receiving: an exchange) is not "
	  "asked to help with a peer's read for this many milliseconds; 0: "
	  "only while it copies" },
	{ "COOP_OFFLOAD", CFG_ENUM, FIELD(offload), "0", 0, 0, bool_words, 0,
	  "1: auto mode gives rendezvous messages to the offload engine (as "
	  "dma) when the provider has one: overlap before bandwidth" },
	{ "COOP_STRIPE_RATIO", CFG_RATIO, FIELD(stripe_ratio), "", 0, 0, NULL,
	  0,
	  "offload striping's R = engine / CPU bandwidth (the engine takes "
	  "R/(1+R) of the bytes; 0: never stripe); unset: measured at the "
	  "first striped send, then adapted to each one's two parts; auto "
	  "mode stripes onto a soft engine only when this is set" },
	{ "COOP_STRIPE_MIN", CFG_SIZE, FIELD(stripe_min), "1m", 0, TIB, NULL,
	  0, "smaller messages are not striped" },
	{ "COOP_OFFLOAD_BUSY", CFG_SIZE, FIELD(offload_busy), "4m", 0, TIB,
	  NULL, 0,
	  "the offload engine counts as busy while the node has this many "
	  "bytes in flight on it (offload counters): no new striped or "
	  "offloaded transfer then (0: never busy)" },
	{ "COOP_ENGINE", CFG_ENUM, FIELD(engine), "dma", 0, 0, engine_words,
	  CFG_AGREE,
	  "the offload engine (COOP_RNDV=dma/stripe, COOP_OFFLOAD, auto "
	  "mode's striping, COOP_XFER_ENGINE): dma (the provider's own: the "
	  "coopmpi driver's DMA channel; the shm provider has none) or hca "
	  "(RDMA loopback through the node's RDMA adapter with libibverbs, "
	  "with either provider: pins the buffers it moves, so RLIMIT_MEMLOCK "
	  "must allow them; not for COOP_INIT_DYNAMIC endpoints)" },
	{ "COOP_HCA_DEVICE", CFG_TEXT, FIELD(hca_device), "", 0, 0, NULL, 0,
	  "COOP_ENGINE=hca: the RDMA device (e.g. mlx5_0, rxe0); unset: the "
	  "first one with an active port" },
	{ "COOP_HCA_GID", CFG_UINT, FIELD(hca_gid), "auto", 0, 1023,
	  gid_words, 0,
	  "COOP_ENGINE=hca on RoCE: the port's GID index; auto: its first "
	  "RoCE v2 GID with an IPv4 address, else its first" },
	{ "COOP_HCA_MR_CACHE", CFG_UINT, FIELD(hca_mr_cache), "32", 0, 256,
	  NULL, 0,
	  "COOP_ENGINE=hca: HCA registrations (pinned buffers) a rank keeps "
	  "after their message for the next one on the same buffer, each "
	  "watched through one of the driver's windows so that a buffer "
	  "freed and allocated again is registered anew; kmod provider with "
	  "COOP_WINDOWS; 0: none" },
	{ "COOP_PRECOPY_BYTES", CFG_SIZE, FIELD(precopy_bytes), "16m", 4 * KIB,
	  64 * GIB, NULL, 0,
	  "COOP_RNDV=precopy: each rank's staging area for the messages it "
	  "sends (shared memory, allocated as used)" },
	{ "COOP_POSTCOPY_BYTES", CFG_SIZE, FIELD(postcopy_bytes), "16m",
	  4 * KIB, 64 * GIB, NULL, 0,
	  "COOP_RNDV=postcopy: each rank's staging area for the messages it "
	  "receives, split evenly among the ranks that send to it" },
	{ "COOP_NEIGHBOR_ORDER", CFG_ENUM, FIELD(nbr_order), "list", 0, 0,
	  order_words, CFG_AGREE,
	  "neighborhood collectives: how a rank's sends start; list: all at "
	  "once, in the order of the graph's Welsh-Powell colouring; color: "
	  "in its rounds, each after the previous one completed (the "
	  "paper's: no receiver is a hot spot, but a round waits for its "
	  "slowest receiver)" },
	{ "COOP_NEIGHBOR_TREE_MAX", CFG_SIZE, FIELD(nbr_tree_max), "256", 0,
	  MIB, NULL, CFG_AGREE,
	  "neighborhood collectives of a COOP_TOPO_EXACT_BYTES topology "
	  "with blocks of at most this: tree balancing (busy senders hand "
	  "messages to idle ranks that forward them); 0: never" },
	{ "COOP_NEIGHBOR_TREE_SHARED", CFG_SIZE, FIELD(nbr_tree_shared), "0",
	  0, MIB, NULL, CFG_AGREE,
	  "COOP_NEIGHBOR_TREE_MAX when a rank of the topology counts more "
	  "ranks than CPUs: a forward is one more rank to be scheduled "
	  "before the message arrives (0: no balancing there)" },
	{ "COOP_NEIGHBOR_TREE_SLACK", CFG_UINT, FIELD(nbr_tree_slack), "2", 0,
	  1024, NULL, CFG_AGREE,
	  "tree balancing: stop when the busiest and the idlest rank's "
	  "sends differ by at most this (the paper's t)" },
	{ "COOP_NEIGHBOR_TREE_HOP_SENDS", CFG_UINT, FIELD(nbr_tree_hop_sends),
	  "1", 0, 1024, NULL, CFG_AGREE,
	  "tree balancing: ceil(L/o), the messages a sender sends itself "
	  "while a forwarder's copy is on its way" },
	{ "COOP_NEIGHBOR_EAGER_MAX", CFG_SIZE, FIELD(nbr_eager_max), "8k",
	  256, GIB, NULL, CFG_AGREE,
	  "neighborhood collectives: larger messages skip the bounce copy "
	  "(single-copy rendezvous): every rank sends and receives at once, "
	  "so copies per byte, not latency, decide" },
	{ "COOP_NEIGHBOR_EAGER_SHARED", CFG_SIZE, FIELD(nbr_eager_shared),
	  "16k", 256, GIB, NULL, CFG_AGREE,
	  "COOP_NEIGHBOR_EAGER_MAX when the ranks outnumber the CPUs they "
	  "may run on: a handshake's waits cost context switches there" },
	{ "COOP_NEIGHBOR_SLOT_MAX", CFG_SIZE, FIELD(nbr_slot_max), "64k", 0,
	  MIB, NULL, CFG_AGREE,
	  "neighborhood collectives of a COOP_TOPO_STATIC_BUFFERS topology: "
	  "messages of at most this go through static slots in the "
	  "receiver's shared memory (canary completion, no matching), "
	  "larger ones stream through them in parts of at most this "
	  "(COOP_NEIGHBOR_STREAM_MAX) or go as point-to-point messages; "
	  "0: never" },
	{ "COOP_NEIGHBOR_STREAM_MAX", CFG_SIZE, FIELD(nbr_stream_max), "16m", 0,
	  TIB, NULL, CFG_AGREE,
	  "neighborhood collectives, direct RTR: blocks larger than a slot "
	  "and up to this stream through it in parts of a slot buffer, the "
	  "receiver copying one part out while the sender writes the next "
	  "- static slots (COOP_TOPO_STATIC_BUFFERS with "
	  "COOP_TOPO_EXACT_BYTES, parts of at most COOP_NEIGHBOR_SLOT_MAX) "
	  "and open ones (each call's block, parts of "
	  "COOP_NEIGHBOR_SLOT_OPEN); larger blocks are point-to-point "
	  "messages; 0: never" },
	{ "COOP_NEIGHBOR_SLOT_OPEN", CFG_SIZE, FIELD(nbr_slot_open), "64k", 0,
	  64 * KIB, NULL, CFG_AGREE,
	  "neighborhood collectives of topologies without "
	  "COOP_TOPO_STATIC_BUFFERS: messages of at most this go through "
	  "slots in the receiver's shared memory too, each call's length "
	  "in a word after the data (larger ones stream through in parts "
	  "up to COOP_NEIGHBOR_STREAM_MAX, or say there that they come as "
	  "point-to-point messages); 0: never" },
	{ "COOP_NEIGHBOR_RTR", CFG_ENUM, FIELD(nbr_rtr_tree), "direct", 0, 0,
	  rtr_words, CFG_AGREE,
	  "static slots: how a sender learns that a receiver took the data "
	  "it wrote four calls ago; direct: it finds the slot buffer's "
	  "canary armed again; tree: receivers combine their counts in a "
	  "tree per sender (COOP_NEIGHBOR_RTR_ARITY children each), the "
	  "sender reads its top's" },
	{ "COOP_NEIGHBOR_RTR_ARITY", CFG_UINT, FIELD(nbr_rtr_arity), "4", 1,
	  64, NULL, CFG_AGREE,
	  "COOP_NEIGHBOR_RTR=tree: children per tree node" },
	{ "COOP_CMA", CFG_ENUM, FIELD(cma_off), "auto", 0, 0, cma_words, 0,
	  "off: never copy across processes in one step, pipeline large "
	  "messages through bounce buffers; auto: probe at connect (shm "
	  "provider: process_vm_readv/writev; the driver's copies are not "
	  "CMA and stay on)" },
	{ "COOP_RING_SLOTS", CFG_UINT, FIELD(ring_slots), "1024", 16,
	  1u << 20, NULL, CFG_POW2,
	  "control ring slots per endpoint, a power of two (shm provider)" },
	{ "COOP_FBOX_SLOTS", CFG_UINT, FIELD(fbox_slots), "64", 0, 4096,
	  NULL, CFG_POW2,
	  "fast box slots per sender (shm provider, static domains): a "
	  "power of two >= 4, 0 none (every message through the ring)" },
	{ "COOP_FBOX_SENDERS", CFG_UINT, FIELD(fbox_senders), "32", 0, 64,
	  NULL, 0,
	  "senders to a rank that get a fast box there, the first to send; "
	  "the rank polls each (0: none)" },
	{ "COOP_BOUNCE_SLOTS", CFG_UINT, FIELD(bounce_slots), "64", 4, 4096,
	  NULL, 0, "bounce buffers per rank" },
	{ "COOP_WINDOWS", CFG_UINT, FIELD(windows), "64", 0, 256, NULL, 0,
	  "peers' regions kept mapped by a rank (kmod provider: the driver's "
	  "windows), whose chunks it copies with memcpy instead of the "
	  "driver's COPY; its own regions may be mapped by peers; 0: none" },
	{ "COOP_REG_CACHE", CFG_UINT, FIELD(reg_cache), "64", 0, 4096, NULL,
	  0,
	  "registrations a rank keeps after their message, for the next one "
	  "on the same buffer (and the peers' windows of it); kmod "
	  "provider, whose regions name addresses, not pages; 0: none" },
	{ "COOP_SPIN", CFG_UINT, FIELD(spin), "20000", 0, 1u << 30, NULL, 0,
	  "empty polls of a blocked call before it sleeps (about 0.3 ms by "
	  "default; one in 256 yields the CPU to ranks that share it, every "
	  "one when the ranks outnumber the CPUs they may run on)" },
	{ "COOP_SLEEP_US", CFG_UINT, FIELD(sleep_us), "10000", 0, 10000, NULL,
	  0,
	  "longest sleep of a blocked call in microseconds (sleeps start at "
	  "50 us and double, <= 1 ms while work may end without a message; "
	  "0: never sleep, yield)" },
	{ "COOP_BOOT_TIMEOUT_S", CFG_UINT, FIELD(boot_timeout), "60", 1,
	  86400, NULL, 0,
	  "coop_init_from_env(): seconds to wait for the other ranks" },
	{ "COOP_THREADS", CFG_ENUM, FIELD(threads), "serialized", 0, 0,
	  threads_words, 0,
	  "multiple: several threads may call into a context at once "
	  "(COOP_THREAD_MULTIPLE, as coop_init's COOP_INIT_THREAD_MULTIPLE); "
	  "serialized: one at a time, no locking cost" },
	{ "COOP_PROGRESS", CFG_ENUM, FIELD(progress), "manual", 0, 0,
	  progress_words, 0,
	  "who moves rendezvous data while the application computes: manual "
	  "(only its library calls), thread (a progress thread per context "
	  "that polls: wants a spare core) or thread-sleep (a progress thread "
	  "asleep on the mailbox doorbell, woken by arriving messages: for "
	  "full nodes); a thread implies COOP_THREADS=multiple.  Dynamic "
	  "endpoints (COOP_INIT_DYNAMIC) start theirs only with "
	  "coop_set_progress(), once their handlers are set" },
	{ "COOP_PROGRESS_CPU", CFG_UINT, FIELD(progress_cpu), "none", 0, 4095,
	  cpu_words, 0,
	  "CPU the progress thread is bound to (none: where the scheduler "
	  "puts it)" },
};

/*
 * coop_init_from_env()'s section: scripts/cooprun's variables, which
 * coop_init() does not read - an MPI's processes may carry them from a
 * launcher of their own, with values that are not ours.
 */
static const struct cfg_entry boot_table[] = {
	{ "COOP_SIZE", CFG_UINT, BOOT(size), NULL, 1, 65533, NULL, 0,
	  "coop_init_from_env(): the number of ranks; scripts/cooprun sets "
	  "it, COOP_RANK and COOP_JOB, which coop_init() does not read" },
	{ "COOP_RANK", CFG_UINT, BOOT(rank), NULL, 0, 65532, NULL, 0,
	  "coop_init_from_env(): this process's rank, below COOP_SIZE" },
	{ "COOP_JOB", CFG_HEX, BOOT(job), NULL, 0, 0, NULL, 0,
	  "coop_init_from_env(): the job key, unique per launch (the name of "
	  "its rendezvous file in /dev/shm too)" },
};

/*
 * COOP_ variables that are not the library's but its project's: the
 * scripts, tests and benchmarks read them, and programs they start
 * inherit them, so they are no misspelling.  A name ending in '_' stands
 * for every name it begins.  scripts/settings-check.sh keeps this true:
 * it fails when a file of the project uses a COOP_ variable that is
 * neither a setting nor here, or when nothing uses one of these.
 */
static const char *const others[] = {
	"COOP_TEST_",		/* the tests' knobs: COOP_TEST_SEED, ... */
	"COOP_VM_",		/* scripts/vm/run */
	"COOP_IN_VM",		/* set in the test VM */
	"COOP_CACHE",		/* scripts/deb-src.sh, ucx-src.sh */
	"COOP_UCX_MODULE",	/* scripts/coopmpi-run */
	"COOP_OMPI_PML",	/* scripts/coopmpi-run */
	"COOP_RXE_DEV",		/* scripts/vm/rxe-up */
	"COOP_RSH_PORT",	/* tests/nodes */
};

/*
 * Old names of renamed settings, read for one release after the rename
 * (the library is 0.1.0 now) with a warning that names the new one, then
 * removed.  The new name wins when both are set.  Time settings name
 * their unit (_US, _MS, _S); COOP_COOP_MIN is COOP_HYBRID_MIN, as the UCX
 * transport's UCX_COOP_COOP_MIN is UCX_COOP_HYBRID_MIN (lib/ucx/iface.c);
 * the neighbour trees' paper symbols t and ceil(L/o) say what they are.
 */
static const struct cfg_alias {
	const char *old, *name;
} aliases[] = {
	{ "COOP_COOP_MIN", "COOP_HYBRID_MIN" },
	{ "COOP_LOAD_HISTORY", "COOP_LOAD_HISTORY_MS" },
	{ "COOP_LOAD_BUSY", "COOP_LOAD_BUSY_MS" },
	{ "COOP_BOOT_TIMEOUT", "COOP_BOOT_TIMEOUT_S" },
	{ "COOP_NEIGHBOR_TREE_T", "COOP_NEIGHBOR_TREE_SLACK" },
	{ "COOP_NEIGHBOR_TREE_LO", "COOP_NEIGHBOR_TREE_HOP_SENDS" },
};

#define NENTRIES (sizeof(table) / sizeof(table[0]))
#define NBOOT (sizeof(boot_table) / sizeof(boot_table[0]))
#define NOTHERS (sizeof(others) / sizeof(others[0]))
#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

static int bad(const char *var, const char *val)
{
	fprintf(stderr, "coopmpi: invalid %s=\"%s\" (coop_info lists the "
		"settings)\n", var, val);
	return COOP_ERR_CONFIG;
}

/* The variable's text, NULL when unset or empty (as everywhere in the
 * table). */
static const char *env_text(const char *name)
{
	const char *s = getenv(name);

	return s && *s ? s : NULL;
}

/* The old name of the setting called name, or NULL. */
static const char *old_name(const char *name)
{
	unsigned i;

	for (i = 0; i < NALIASES; i++)
		if (!strcmp(aliases[i].name, name))
			return aliases[i].old;
	return NULL;
}

/* The environment's text for e, under its name or else its old one, and
 * (from, may be NULL) the variable that gave it; NULL when none does. */
static const char *env_of(const struct cfg_entry *e, const char **from)
{
	const char *var = e->name, *s = env_text(var);

	if (!s && old_name(var)) {
		var = old_name(var);
		s = env_text(var);
	}
	if (from)
		*from = var;
	return s;
}

/* Unsigned number with optional k/m/g suffix: 0, or -1 when malformed. */
static int parse_size(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': *v <<= 10; end++; break;
	case 'm': case 'M': *v <<= 20; end++; break;
	case 'g': case 'G': *v <<= 30; end++; break;
	default: break;
	}
	return *end ? -1 : 0;
}

static int parse_hex(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_ratio(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s) {		/* unset: measure it */
		*out = -1;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 1e6))
		return -1;
	*out = v;
	return 0;
}

static int parse_word(const struct cfg_word *w, const char *s, int *out)
{
	for (; w->word; w++) {
		if (!strcmp(s, w->word)) {
			*out = w->value;
			return 0;
		}
	}
	return -1;
}

static int out_of_range(const struct cfg_entry *e, unsigned long long v)
{
	if (v < e->lo || v > e->hi)
		return 1;
	return (e->flags & CFG_POW2) && v && (v < 4 || (v & (v - 1)));
}

/* Store the text s (a default or the environment's) into its field of
 * base, the struct of e's section. */
static int parse(const struct cfg_entry *e, const char *s, void *base)
{
	char *field = (char *)base + e->offset;
	unsigned long long v;

	switch (e->type) {
	case CFG_RATIO:
		return parse_ratio(s, (double *)field);
	case CFG_ENUM:
		return parse_word(e->words, s, (int *)field);
	case CFG_TEXT:
		if (strlen(s) >= COOP_CFG_TEXT_MAX)
			return -1;
		strcpy(field, s);
		return 0;
	case CFG_HEX:
		return parse_hex(s, (uint64_t *)field);
	default:
		break;
	}
	if (e->words && !parse_word(e->words, s, (int *)field))
		return 0;	/* a CFG_UINT's word */
	if (parse_size(s, &v) || out_of_range(e, v))
		return -1;
	if (e->type == CFG_SIZE)
		*(size_t *)field = (size_t)v;
	else if (e->type == CFG_UINT)
		*(unsigned *)field = (unsigned)v;
	else
		*(uint64_t *)field = (uint64_t)v * 1000000ULL;
	return 0;
}

/* Fill base from the n entries' defaults and the environment: the code
 * of the last refusal, each refused value named on stderr. */
static int load(const struct cfg_entry *t, unsigned n, void *base)
{
	const char *s, *var;
	unsigned i;
	int rc = COOP_SUCCESS;

	for (i = 0; i < n; i++) {
		s = env_of(&t[i], &var);
		if (t[i].def && parse(&t[i], t[i].def, base))
			abort();	/* a default outside its own range */
		if (s && parse(&t[i], s, base))
			rc = bad(var, s);
	}
	return rc;
}

int coop_config_load(struct coop_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return load(table, NENTRIES, cfg);
}

/* The entry of the section t (n entries) named by the len bytes at name,
 * or NULL. */
static const struct cfg_entry *find(const struct cfg_entry *t, unsigned n,
				    const char *name, size_t len)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (!strncmp(t[i].name, name, len) && !t[i].name[len])
			return &t[i];
	return NULL;
}

int coop_config_load_boot(struct coop_boot_env *b)
{
	static const char name[] = "COOP_RANK";
	const struct cfg_entry *rank;
	unsigned i;
	int rc;

	memset(b, 0, sizeof(*b));
	rc = load(boot_table, NBOOT, b);
	for (i = 0; i < NBOOT && !rc; i++)
		if (!env_of(&boot_table[i], NULL))
			rc = COOP_ERR_BOOTSTRAP;
	rank = find(boot_table, NBOOT, name, sizeof(name) - 1);
	if (!rc && b->rank >= b->size)
		rc = bad(rank->name, env_of(rank, NULL));
	return rc;
}

/* Is the name (len bytes) one of others[], or begun by one of them? */
static int other_name(const char *name, size_t len)
{
	size_t n;
	unsigned i;

	for (i = 0; i < NOTHERS; i++) {
		n = strlen(others[i]);
		if (others[i][n - 1] == '_' ? n < len : n == len)
			if (!strncmp(name, others[i], n))
				return 1;
	}
	return 0;
}

/* The first time this process asks about the name (len bytes)?  A
 * process may open several contexts and should hear about a name once.
 * Names are remembered until their room is full, then none is new. */
static int first_time(const char *name, size_t len)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char seen[1024];		/* "NAME\0NAME\0..." */
	static size_t used;
	size_t at;
	int first = 0;

	pthread_mutex_lock(&lock);
	for (at = 0; at < used; at += strlen(seen + at) + 1)
		if (!strncmp(seen + at, name, len) && !seen[at + len])
			break;
	if (at >= used && used + len + 1 <= sizeof(seen)) {
		memcpy(seen + used, name, len);
		seen[used + len] = 0;
		used += len + 1;
		first = 1;
	}
	pthread_mutex_unlock(&lock);
	return first;
}

/* The alias whose old name is the len bytes at name, or NULL. */
static const struct cfg_alias *alias_of(const char *name, size_t len)
{
	unsigned i;

	for (i = 0; i < NALIASES; i++)
		if (!strncmp(aliases[i].old, name, len) &&
		    !aliases[i].old[len])
			return &aliases[i];
	return NULL;
}

/* What to say about the COOP_ name (len bytes) that is no setting: the
 * new name of an old one, else that it may be misspelled. */
static void name_warning(const char *name, size_t len, char *why,
			 size_t size)
{
	const struct cfg_alias *a = alias_of(name, len);

	if (!a)
		snprintf(why, size, "is not a setting of libcoopmpi "
			 "(misspelled?); coop_info lists the settings");
	else
		snprintf(why, size, "is deprecated, use %s%s", a->name,
			 env_text(a->name) ? "; that one, set too, wins" : "");
}

void coop_config_warn_env(const struct coop_config *cfg)
{
	char **env, why[128];
	size_t len;

	if (!cfg->warn_settings)
		return;
	for (env = environ; *env; env++) {
		if (strncmp(*env, "COOP_", 5))
			continue;
		len = strcspn(*env, "=");
		if (find(table, NENTRIES, *env, len) ||
		    find(boot_table, NBOOT, *env, len) ||
		    other_name(*env, len) || !first_time(*env, len))
			continue;
		name_warning(*env, len, why, sizeof(why));
		fprintf(stderr, "coopmpi: warning: %.*s %s "
			"(COOP_WARN_SETTINGS=0 silences this)\n", (int)len,
			*env, why);
	}
}

/* Has e a value: a default, or one the environment gives and e takes? */
static int has_value(const struct cfg_entry *e)
{
	union {
		struct coop_config cfg;
		struct coop_boot_env boot;
	} scratch;
	const char *s = env_of(e, NULL);

	return e->def || (s && !parse(e, s, &scratch));
}

/* The value of entry e in base, as the user would write it (nothing for
 * one without a value). */
static void value_text(const struct cfg_entry *e, const void *base,
		       char *buf, size_t len)
{
	const char *field = (const char *)base + e->offset;
	const struct cfg_word *w;

	if (!has_value(e)) {
		buf[0] = 0;
		return;
	}
	switch (e->type) {
	case CFG_SIZE:
		snprintf(buf, len, "%zu", *(const size_t *)field);
		break;
	case CFG_UINT:
		for (w = e->words; w && w->word; w++)
			if ((unsigned)w->value == *(const unsigned *)field)
				break;
		if (w && w->word)
			snprintf(buf, len, "%s", w->word);
		else
			snprintf(buf, len, "%u", *(const unsigned *)field);
		break;
	case CFG_MS:
		snprintf(buf, len, "%llu", (unsigned long long)
			 (*(const uint64_t *)field / 1000000ULL));
		break;
	case CFG_RATIO:
		if (*(const double *)field < 0)
			snprintf(buf, len, "(measured)");
		else
			snprintf(buf, len, "%g", *(const double *)field);
		break;
	case CFG_ENUM:
		for (w = e->words; w->word; w++)
			if (w->value == *(const int *)field)
				break;
		snprintf(buf, len, "%s", w->word ? w->word : "?");
		break;
	case CFG_TEXT:
		snprintf(buf, len, "%s", field);
		break;
	case CFG_HEX:
		snprintf(buf, len, "%016llx",
			 (unsigned long long)*(const uint64_t *)field);
		break;
	}
}

/* "0..1m", "auto|rget|...": what the entry accepts. */
static void range_text(const struct cfg_entry *e, char *buf, size_t len)
{
	const struct cfg_word *w;
	size_t n = 0;

	switch (e->type) {
	case CFG_RATIO:
		snprintf(buf, len, "a number >= 0, or unset");
		return;
	case CFG_TEXT:
		snprintf(buf, len, "a name of < %d characters, or unset",
			 COOP_CFG_TEXT_MAX);
		return;
	case CFG_HEX:
		snprintf(buf, len, "up to 16 hex digits");
		return;
	case CFG_ENUM:
		buf[0] = 0;
		for (w = e->words; w->word && n < len; w++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      n ? "|" : "", w->word);
		return;
	default:
		snprintf(buf, len, "%llu..%llu%s%s%s%s",
			 (unsigned long long)e->lo, (unsigned long long)e->hi,
			 e->type == CFG_SIZE ? " bytes (k, m, g suffixes)" :
			 e->type == CFG_MS ? " ms" : "",
			 !(e->flags & CFG_POW2) ? "" :
			 e->lo ? ", a power of two" :
			 ", 0 or a power of two >= 4",
			 e->words ? " or " : "",
			 e->words ? e->words[0].word : "");
	}
}

/* The default as a user writes it. */
static const char *def_text(const struct cfg_entry *e)
{
	return e->def && *e->def ? e->def : "(unset)";
}

#define WRAP 72

/* text as "# " comment lines of at most WRAP columns, cut at spaces. */
static void print_comment(FILE *out, const char *text)
{
	while (*text) {
		int n = (int)strlen(text);

		if (n > WRAP) {
			n = WRAP;
			while (n > 0 && text[n] != ' ')
				n--;
			if (!n)
				n = WRAP;
		}
		fprintf(out, "# %.*s\n", n, text);
		text += n;
		while (*text == ' ')
			text++;
	}
}

/* One entry of the section whose struct is base: its documentation as
 * comment lines, then NAME=value. */
static void print_entry(FILE *out, const struct cfg_entry *e,
			const void *base)
{
	const char *old = old_name(e->name);
	char val[64], range[128], line[256];

	value_text(e, base, val, sizeof(val));
	range_text(e, range, sizeof(range));
	fprintf(out, "#\n");
	print_comment(out, e->doc);
	snprintf(line, sizeof(line), "default %s; accepted: %s%s%s%s",
		 def_text(e), range,
		 e->flags & CFG_AGREE ? "; all ranks must agree" : "",
		 old ? "; old name (still read, for one release): " : "",
		 old ? old : "");
	print_comment(out, line);
	fprintf(out, "%s=%s\n", e->name, val);
}

/* The boot section as this environment gives it: rc, or the refusal of
 * one of its values (one it lacks is no refusal outside cooprun). */
static int load_boot_shown(struct coop_boot_env *b, int rc)
{
	int boot = coop_config_load_boot(b);

	return rc || boot != COOP_ERR_CONFIG ? rc : boot;
}

int coop_config_print_table(FILE *out, const struct coop_config *cfg)
{
	struct coop_config cur;
	struct coop_boot_env boot;
	unsigned i;
	int rc = COOP_SUCCESS;

	if (!cfg) {
		rc = coop_config_load(&cur);
		cfg = &cur;
	}
	rc = load_boot_shown(&boot, rc);
	fprintf(out, "# libcoopmpi settings (environment variables), with "
		"the values in effect\n");
	for (i = 0; i < NENTRIES; i++)
		print_entry(out, &table[i], cfg);
	for (i = 0; i < NBOOT; i++)
		print_entry(out, &boot_table[i], &boot);
	return rc;
}

static void print_line(FILE *out, const struct cfg_entry *e,
		       const void *base)
{
	const char *var;
	char val[64], from[64] = "default";

	value_text(e, base, val, sizeof(val));
	if (env_of(e, &var) && var == e->name)
		snprintf(from, sizeof(from), "environment");
	else if (env_of(e, &var))
		snprintf(from, sizeof(from), "environment (%s, old name)", var);
	fprintf(out, "%-28s %-16s %-16s %s\n", e->name, val, def_text(e),
		from);
}

int coop_config_print_brief(FILE *out)
{
	struct coop_config cur;
	struct coop_boot_env boot;
	unsigned i;
	int rc = load_boot_shown(&boot, coop_config_load(&cur));

	fprintf(out, "%-28s %-16s %-16s %s\n", "# setting", "value",
		"default", "source");
	for (i = 0; i < NENTRIES; i++)
		print_line(out, &table[i], &cur);
	for (i = 0; i < NBOOT; i++)
		print_line(out, &boot_table[i], &boot);
	return rc;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

uint64_t coop_config_hash(const struct coop_config *cfg, const char *prov)
{
	uint64_t h = 0x636f6f70ULL;
	const char *c;
	char val[64];
	unsigned i;

	for (i = 0; i < NENTRIES; i++) {
		if (!(table[i].flags & CFG_AGREE))
			continue;
		value_text(&table[i], cfg, val, sizeof(val));
		for (c = val; *c; c++)
			h = mix(h, (unsigned char)*c);
	}
	for (c = prov; *c; c++)
		h = mix(h, (unsigned char)*c);
	return h;
}

const char *coop_config_agreed_names(void)
{
	static char names[256];
	size_t n = 0;
	unsigned i;

	if (names[0])
		return names;
	for (i = 0; i < NENTRIES && n < sizeof(names); i++)
		if (table[i].flags & CFG_AGREE)
			n += (size_t)snprintf(names + n, sizeof(names) - n,
					      "%s%s", n ? "/" : "",
					      table[i].name);
	return names;
}

const char *coop_rndv_name(enum coop_rndv_mode m)
{
	const struct cfg_word *w;

	for (w = rndv_words; w->word; w++)
		if (w->value == (int)m)
			return w->word;
	return "?";
}
