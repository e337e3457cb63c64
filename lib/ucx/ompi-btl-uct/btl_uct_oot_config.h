/* btl_uct_oot_config.h - force-included (gcc -include) when
 * scripts/ompi-btl-uct.sh compiles Open MPI's opal/mca/btl/uct out of tree.
 * It stands in for the AC_CHECK_DECLS of the component's configure.m4,
 * which Debian's build never ran (its opal_config.h has them #undef'd:
 * btl/uct was not configured); everything else comes from the installed
 * opal_config.h.  Values for UCX 1.13.1's uct/api/uct.h:
 *   UCT_PROGRESS_THREAD_SAFE  declared (enum uct_progress_types)
 *   UCT_CB_FLAG_SYNC          not declared (gone since UCX 1.5 or so) */
#define HAVE_DECL_UCT_PROGRESS_THREAD_SAFE 1
#define HAVE_DECL_UCT_CB_FLAG_SYNC 0
