// External variants: an implementation outside attndev (a PyTorch backend, cuDNN, a user's own
// kernel) joins a sweep as a command run once per point (or per input set, when it takes no tile
// size), measured exactly like an emulated variant.
//
// Protocol: attndev writes the point's Q, K, V (rounded to the variant's format) to {inputs}, a
// .safetensors file (experiment/run/tensor_io.hpp: tensors q, k, v of shape (B, H, N, d), metadata
// with every axis), runs the command through /bin/sh and reads O from {output} (.safetensors or
// .npy). stdin is /dev/null; stdout and stderr are read through pipes and only their last
// kExternalTailBytes kept (a chatty command must not fill the disk).
//
// No value can become shell syntax: a placeholder is replaced by a reference to an environment
// variable that holds the value ({output} -> "${ATTNDEV_OUTPUT}", {seq_len} ->
// "${ATTNDEV_AXIS_SEQ_LEN}"), so the shell expands it once and never parses it, whatever the
// output folder's name or an axis value holds. A placeholder inside quotes ("{output}",
// sh -c '... {inputs}') is refused before the sweep starts: quoted, its value would be pasted into
// text that another shell may parse again. Nested shell code names the variables itself.
//
// Every way it can go wrong is a row status, and nothing else of the sweep is lost:
//   exit status 77         skipped: external command: <stderr tail>  (it cannot run here: no GPU
//                          for a CUDA backend, an unsupported dtype; as ctest's skip code)
//   exit status != 0       failed: external command exited with status 3: <stderr tail>
//   killed by a signal     failed: external command killed by signal 11 (SIGSEGV): <stderr tail>
//   past its timeout       failed: external command timed out after 5 s (killed): <stderr tail>
//   no or unreadable O     failed: external command exited 0 but ...: <what>
//   O of the wrong shape   failed: external output has shape (..), expected (..)
//   NaN/inf in O           failed: external output holds 3 NaN and 0 infinite values ...
//                          (the metrics are still recorded: nan_count, inf_count)
// The command runs in its own process group; after every call (a normal exit included) the whole
// tree is ended: the group, then every process orphaned to attndev (a subreaper), which catches
// children that left the group with setsid. When attndev dies, even by SIGKILL, the whole group
// gets SIGKILL from its guardian (exec_guarded_shell); only a process that left it with setsid
// survives.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention/attention.hpp"
#include "experiment/spec/config.hpp"
#include "experiment/spec/external_template.hpp"
#include "experiment/run/status.hpp"
#include "experiment/run/variant_runner.hpp"

namespace attndev::experiment {

// The exit status by which a command says "I cannot run here" (row: skipped, with its stderr).
inline constexpr int kExternalSkipStatus = 77;

struct ExternalResult {
  Status status;
  attention::Output output;  // O when it was read with the right shape (ok, or non-finite values)
};

// `expected` is the shape of Q, K, V (O is (B, H, N_q, d)). Never throws for a failing command.
ExternalResult run_external(const Variant::External& external, numerics::Format format,
                            const ExternalContext& context, const attention::Shape& expected);

// O read back from `output` (safetensors, or `output`.npy) and checked as every external form
// checks it: a missing file is failed "<done> but wrote no {output} file", an unreadable or
// misshapen one failed with the reader's reason (both with `log`'s tail), NaN/inf values failed
// with their counts (the output is kept, so the row still records them).
ExternalResult read_external_output(const std::filesystem::path& output,
                                    const attention::Shape& expected, const std::string& done,
                                    const std::string& log);

// The command line with every placeholder replaced by its environment variable's reference
// ({output} -> "${ATTNDEV_OUTPUT}"); exposed for tests and `attndev plan`. Throws
// std::invalid_argument for a template that external_template_problem refuses.
std::string expand_command(const std::string& command, numerics::Format format,
                           const ExternalContext& context);

// The environment entries ("NAME=value") that the placeholders of expand_command refer to:
// ATTNDEV_INPUTS, ATTNDEV_OUTPUT, ATTNDEV_FORMAT and ATTNDEV_AXIS_<AXIS> for every axis.
std::vector<std::string> external_environment(numerics::Format format,
                                              const ExternalContext& context);

// ---- Process handling, shared by the one-shot and the worker forms of the protocol ----

// How much of a command's stdout and of its stderr is kept (the last bytes).
inline constexpr std::size_t kExternalTailBytes = std::size_t{64} << 10;

// The last `capacity` bytes written to a stream.
class BoundedTail {
 public:
  explicit BoundedTail(std::size_t capacity = kExternalTailBytes) : capacity_(capacity) {}
  void append(std::string_view bytes);
  std::string text() const;                         // the bytes kept, oldest first
  std::size_t dropped() const { return dropped_; }  // bytes discarded from the front

 private:
  std::size_t capacity_;
  std::string buffer_;
  std::size_t dropped_ = 0;
};

// `text` with every control character (C0, DEL, C1) and invalid UTF-8 byte written as \xNN, so
// that a command's output can never drive the terminal that prints a status, nor put a NUL byte
// in a CSV cell.
std::string escape_control(std::string_view text);

struct ProcessExit {
  enum class Kind { exited, signaled, timed_out, stopped, spawn_failed } kind = Kind::exited;
  int code = 0;  // exit status or signal number
  std::string error;
  std::string stdout_tail, stderr_tail;  // raw bytes, at most kExternalTailBytes each
};

// Runs `command` through /bin/sh -c with `environment` added to attndev's, in its own process
// group, stdin /dev/null, and ends its whole tree (end_process_tree) before returning.
ProcessExit run_shell_command(const std::string& command,
                              const std::vector<std::string>& environment, double timeout_s,
                              const std::function<bool()>& stop_requested);

// Kills process group `group` and every process orphaned to this one (which becomes a
// subreaper on the first call of run_shell_command) outside attndev's own process group, and
// reaps them.
void end_process_tree(pid_t group);

// The child side of starting an external command, called in a child of attndev right after
// fork, once its process group and descriptors are set up; never returns. The child stays as the
// group's guardian and runs `/bin/sh -c command` (environment `envp`) as its own child, then
// waits: when the command exits, it exits the same way (status, or the same signal), so the
// caller sees the command's result; when attndev dies, even by SIGKILL, it kills the whole
// group (PR_SET_PDEATHSIG reaches only a direct child, so without it the shell's own children
// outlived a killed attndev). It holds no descriptor, so end of file reaches the command as
// before, and it ignores SIGTERM, SIGINT and SIGHUP (the command decides what they do).
// Only async-signal-safe calls: the parent may have threads. The guardian is a fork of attndev
// that never execs, so it shares (and, as attndev writes them, keeps) attndev's pages while the
// command runs: fit for a per-point command, during which attndev only waits; not for a worker
// that lives through a whole run (external_worker.cpp).
[[noreturn]] void exec_guarded_shell(const char* command, char* const* envp, pid_t parent);

// fork() for a live external worker, whose child makes itself a process group leader: in the
// parent, the child's pid is registered as a kept group before any other thread's
// end_process_tree (which ends every other child of attndev outside attndev's own group after a
// per-point command) can see it, so a worker lives on between points. The child must call
// setpgid(0, 0) and only async-signal-safe functions. release_kept_group when it is ended.
pid_t fork_kept_group();
void release_kept_group(pid_t group);

}  // namespace attndev::experiment
