// `attndev_cuda_check device`: the run-level cuda backend (inputs, golden, twins) on a GPU
// against the CPU path (device_path.cpp).
#pragma once

#include <string>

namespace attndev::cuda_check {

// part: inputs, golden, twins or all; the golden's largest N (powers of 2 from 4096). Exit
// status: 0 all passed, 1 a check failed, 3 nothing compared.
int run_device_checks(const std::string& part, int golden_n);

}  // namespace attndev::cuda_check
