/*
 * bmrm_mex.c: the MEX gateway of bmrm for MATLAB and GNU Octave, over the
 * static library (include/bmrm.h). Built by build_mex.m. Not meant to be
 * called directly: bmrm.m and bcfw.m parse and check the options and call
 *
 *   [W, stat]        = bmrm_mex('bmrm', data, risk, lambda, opts)
 *   [model, prog]    = bmrm_mex('bcfw', param, opts)
 *   [W, stat, pred]  = bmrm_mex('graph', data, lambda, opts, decoder)
 *   version          = bmrm_mex('version')
 *
 * opts is a struct of plain fields (see bmrm.m and bcfw.m for the mapping
 * from the toolboxes' option names).
 *
 * The gateway's files (bmrm_mex.h declares what they share):
 *   bmrm_mex.c       this dispatcher
 *   mex_gate.c       calls into MATLAB that never raise; reading outputs
 *   mex_callbacks.c  the library's callbacks (risk, BCFW oracle, progress)
 *   mex_options.c    opts into bmrm_settings
 *   mex_run.c        one solve, its results, its error raised afterwards
 *   mex_bmrm.c       the 'bmrm' command (bundle methods)
 *   mex_bcfw.c       the 'bcfw' command (BCFW, lambda sequences, logged models)
 *   mex_graph.c      the 'graph' command (factor-graph models, bmrm_graph.m)
 *   mex_dual.c       BCFW's dual state to and from MATLAB (gapBCFW's cache)
 *
 * Rules these files follow:
 * - The user's function handles are called only from callbacks registered as
 *   NOT thread-safe, which the library runs on the thread that called
 *   bmrm_solver_run: MATLAB's thread.
 * - A callback never raises a MATLAB error: MATLAB calls go through
 *   mexCallMATLABWithTrap (in Octave through bmrm_octave_feval.cc, which
 *   catches what Octave throws, interrupts included); a failure, a NaN or a
 *   malformed output is recorded with its message and the callback returns
 *   non-zero, which ends the solve.
 * - mexErrMsgIdAndTxt is called only at the top level of mexFunction, after
 *   every library handle and every malloc'd buffer is freed.
 * - Ctrl-C: polled before every call into MATLAB and after every iteration
 *   (utIsInterruptPending in MATLAB, Octave's interrupt state in Octave); in
 *   Octave a Ctrl-C landing inside the user's function is caught too. The
 *   solve then stops, everything is freed, and the error 'bmrm:interrupted'
 *   is raised.
 */
#include "bmrm_mex.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
    char cmd[16] = "";
    if (nrhs < 1 || !mxIsChar(prhs[0]) || mxGetString(prhs[0], cmd, sizeof cmd) != 0)
        mexErrMsgIdAndTxt("bmrm:badArgument",
                          "bmrm_mex is the gateway of bmrm.m and bcfw.m: call those");
    if (strcmp(cmd, "version") == 0) {
        plhs[0] = mxCreateString(bmrm_version());
    } else if (strcmp(cmd, "bmrm") == 0) {
        do_bmrm(nlhs, plhs, nrhs, prhs);
    } else if (strcmp(cmd, "graph") == 0) {
        do_graph(nlhs, plhs, nrhs, prhs);
    } else if (strcmp(cmd, "bcfw") == 0) {
        do_bcfw(nlhs, plhs, nrhs, prhs);
    } else {
        mexErrMsgIdAndTxt("bmrm:badArgument", "bmrm_mex: unknown command '%s'", cmd);
    }
}
