/*
 * bmrm_octave_feval.cc: GNU Octave only. Calls a function handle from the
 * MEX gateway (bmrm_mex.c) so that nothing Octave throws can unwind through
 * the gateway's C frames or the Rust library's.
 *
 * Why this file exists (and is C++): Octave's MEX API reports an error in a
 * called function by throwing octave::execution_exception, and Ctrl-C by
 * throwing octave::interrupt_exception from inside the interpreter.
 * mexCallMATLABWithTrap catches the first but replaces the user's message
 * with "function call <feval> failed", and does not catch the second at all:
 * an interrupt during a callback would unwind into bmrm_solver_run, which
 * must not happen (the library aborts rather than unwind). Only C++ can catch
 * them. MATLAB builds do not use this file: there mexCallMATLABWithTrap
 * returns an MException with the user's message, and Ctrl-C is polled with
 * utIsInterruptPending.
 */
#include <cstddef>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <octave/oct.h>
#include <octave/interpreter.h>
#include <octave/quit.h>

// mex.h cannot be included next to Octave's C++ headers (both declare
// mxArray); the two MEX functions used here, as mexproto.h declares them.
extern "C" {
int mexCallMATLAB(int nargout, mxArray *argout[], int nargin, mxArray *argin[],
                  const char *fname);
void mexSetTrapFlag(int flag);
}

namespace {

void copy(const std::string &s, char *buf, std::size_t len) {
    if (len == 0) return;
    std::snprintf(buf, len, "%s", s.c_str());
}

void recover() {
    octave::interpreter *interp = octave::interpreter::the_interpreter();
    if (interp != nullptr) interp->recover_from_exception();
}

} // namespace

/*
 * feval(in[0], in[1..nin-1]) with nout outputs into out[]. Returns 0 on
 * success, 1 on an error (its message and identifier in msg and id), 2 when
 * interrupted by Ctrl-C. Never throws.
 */
extern "C" int bmrm_octave_feval(int nout, mxArray **out, int nin, mxArray **in, char *msg,
                                 std::size_t msg_len, char *id, std::size_t id_len) {
    copy("", msg, msg_len);
    copy("", id, id_len);
    try {
        mexSetTrapFlag(0); // errors arrive here as exceptions, with their message
        int rc = mexCallMATLAB(nout, out, nin, in, "feval");
        if (rc != 0) {
            copy("the call failed", msg, msg_len);
            return 1;
        }
        return 0;
    } catch (const octave::execution_exception &ee) {
        copy(ee.message(), msg, msg_len);
        copy(ee.identifier(), id, id_len);
        recover();
        return 1;
    } catch (const octave::interrupt_exception &) {
        recover();
        return 2;
    } catch (const std::bad_alloc &) {
        copy("out of memory", msg, msg_len);
        recover();
        return 1;
    } catch (const std::exception &e) {
        copy(e.what(), msg, msg_len);
        recover();
        return 1;
    } catch (...) {
        copy("an exception Octave did not describe (e.g. exit called in a callback)", msg,
             msg_len);
        recover();
        return 1;
    }
}

/*
 * Whether Ctrl-C was pressed (Octave's pending-interrupt state); clears it,
 * so that the gateway reports the interrupt as its own error after freeing
 * the solver instead of Octave throwing it at the next statement.
 */
extern "C" int bmrm_octave_interrupt_pending(void) {
    if (octave_interrupt_state > 0) {
        octave_interrupt_state = 0;
        return 1;
    }
    return 0;
}
