// External variants in worker form: one long-lived process per external variant and run, sent one
// point at a time, instead of a process per point (experiment/run/external.hpp). A Python
// implementation pays its interpreter start, `import torch` and CUDA initialisation once per run,
// not once per point.
//
// Config: `"external": {"worker": "python3 -m attndev.worker module:function", "tiles": false,
// "start_timeout": 120}` (docs/configs.md#external-workers).
// The command runs through /bin/sh as written (it takes no placeholders: nothing of a point is ever
// put into shell text), in its own process group, with:
//   stdin         requests, one JSON object per line:
//                   {"id": 7, "inputs": PATH, "output": PATH, "format": "bf16", "axes": {...}}
//                 (a socket: a write to a dead worker is an error, never a SIGPIPE for attndev);
//                 end of file means "exit now"
//   fd 3          answers, one JSON object per line (the number is in $ATTNDEV_WORKER_FD):
//                   {"ready": true}                              once, after start-up
//                   {"id": 7, "status": "done"}                  O written to the request's output
//                   {"id": 7, "status": "failed", "error": "..."}
//                   {"id": 7, "status": "skipped", "reason": "..."}   cannot run here (no GPU)
//   stdout, stderr  the worker's log: whatever it prints, kept as a bounded tail that failed rows
//                 quote (non-printable bytes escaped), so a library's chatter cannot break the
//                 protocol.
//
// Every way it can go wrong fails the point's row only, as in the per-point form:
//   no ready before start_timeout, or an exit before it  failed: external worker ... at start
//   no answer within the timeout                        failed: ... timed out after 5 s (killed)
//   exit or signal while a point runs                   failed: external worker killed by signal 6
//   an answer that is not the protocol's                failed: external worker answered garbage
//   done, but the output is missing, misshapen, NaN     as the per-point form
// After any of these the worker is ended (its group SIGTERM, then SIGKILL) and the next point
// starts a new one, so a worker in an unknown state never computes another point. A failed or
// skipped answer keeps the worker: it said what happened and is ready for the next request. A
// worker found dead between points is replaced before the next request, which it never saw.
// Workers are ended (end of file, then the group killed after a grace) by end_workers(), which
// runs when attndev exits; when attndev dies the kernel closes the request socket, and
// attndev.worker exits on that hang-up even mid-point.
#pragma once

#include <string>

#include "attention/attention.hpp"
#include "experiment/run/external.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/run/variant_runner.hpp"

namespace attndev::experiment {

// One point on the worker of variant `name` (started, or restarted, when there is none). The
// start is bounded by `start_timeout_s`, each point by `timeout_s`. Never throws for a failing
// worker.
ExternalResult run_worker_point(const Variant::External& external, const std::string& name,
                                numerics::Format format, const ExternalContext& context,
                                const attention::Shape& expected);

// Ends every worker this process started and waits for them. Idempotent; also called at exit.
void end_workers();

// How many workers were started in this process (restarts included); for tests and logs.
int workers_started();

}  // namespace attndev::experiment
