// SPDX-License-Identifier: GPL-2.0
/*
 * Who the DMA workers serve next: each user's ready descriptors wait in
 * that user's queue (user->dma_ready), and the users with some take
 * turns (the round, user->dma_turn), one chunk each.  However many
 * descriptors one user floods the node with, or keeps stuck, another
 * user's descriptor waits for at most one chunk of each other active
 * user per worker; within a user, descriptors take turns the same way.
 *
 * The dma_workers runners are work items of coopmpi_dma_wq: each takes
 * the next descriptor, runs one step of it (dma_xfer.c) and goes on
 * until nothing is ready.  A descriptor is in at most one place: a
 * queue, a runner, or its retry timer.
 */
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timer.h>

#include "dma.h"

/* Steps a runner takes before it gives its CPU back to other work. */
#define RUNNER_BATCH	64

static DEFINE_SPINLOCK(sched_lock);	/* timers queue from softirq */
static LIST_HEAD(sched_round);		/* users with ready descriptors */
static struct work_struct *runners;
static unsigned int nr_runners;

static void sched_kick(void)
{
	unsigned int i;

	/* a pending runner stays pending; a running one runs once more */
	for (i = 0; i < nr_runners; i++)
		queue_work(coopmpi_dma_wq, &runners[i]);
}

void coopmpi_dma_sched_ready(struct coopmpi_dma_op *op)
{
	struct coopmpi_user *u = op->user;
	unsigned long flags;

	spin_lock_irqsave(&sched_lock, flags);
	list_add_tail(&op->sched_node, &u->dma_ready);
	if (list_empty(&u->dma_turn))
		list_add_tail(&u->dma_turn, &sched_round);
	spin_unlock_irqrestore(&sched_lock, flags);
	sched_kick();
}

static void sched_retry_fire(struct timer_list *t)
{
	struct coopmpi_dma_op *op = from_timer(op, t, retry);

	coopmpi_dma_sched_ready(op);
}

void coopmpi_dma_sched_init_op(struct coopmpi_dma_op *op)
{
	timer_setup(&op->retry, sched_retry_fire, 0);
	INIT_LIST_HEAD(&op->sched_node);
}

void coopmpi_dma_sched_retry(struct coopmpi_dma_op *op, unsigned long delay)
{
	mod_timer(&op->retry, jiffies + delay);
}

/* The first user of the round gives its first descriptor, then waits. */
static struct coopmpi_dma_op *sched_next(void)
{
	struct coopmpi_dma_op *op = NULL;
	struct coopmpi_user *u;

	spin_lock_irq(&sched_lock);
	u = list_first_entry_or_null(&sched_round, struct coopmpi_user,
				     dma_turn);
	if (u) {
		op = list_first_entry(&u->dma_ready, struct coopmpi_dma_op,
				      sched_node);
		list_del_init(&op->sched_node);
		list_del_init(&u->dma_turn);
		if (!list_empty(&u->dma_ready))
			list_add_tail(&u->dma_turn, &sched_round);
	}
	spin_unlock_irq(&sched_lock);
	return op;
}

static void sched_runner(struct work_struct *work)
{
	struct coopmpi_dma_op *op;
	unsigned int n;

	for (n = 0; n < RUNNER_BATCH; n++) {
		op = sched_next();
		if (!op)
			return;
		coopmpi_dma_op_run(op);
		cond_resched();
	}
	queue_work(coopmpi_dma_wq, work);
}

int coopmpi_dma_sched_init(unsigned int workers)
{
	unsigned int i;

	runners = kcalloc(workers, sizeof(*runners), GFP_KERNEL);
	if (!runners)
		return -ENOMEM;
	for (i = 0; i < workers; i++)
		INIT_WORK(&runners[i], sched_runner);
	nr_runners = workers;
	return 0;
}

/* After the workqueue is destroyed: no runner, no descriptor is left. */
void coopmpi_dma_sched_exit(void)
{
	WARN_ON_ONCE(!list_empty(&sched_round));
	kfree(runners);
	runners = NULL;
	nr_runners = 0;
}
