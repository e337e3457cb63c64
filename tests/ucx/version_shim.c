/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* version_shim.c - test only: a UCX that says it is 1.12.0, preloaded so
 * that libuct_coop.so must refuse to register (tests/ucx/run.sh). */
void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
	*major = 1;
	*minor = 12;
	*release = 0;
}
