// Figures drawn by the project's Python scripts (scripts/draw_pivot.py for `plot`,
// scripts/draw_attribution.py for `attribute`) with the Python of the plotting environment that
// scripts/plot-venv.sh makes on first use (docs/plot.md says where it lives and why).
//
// The script never writes the figure's path itself: it writes a fresh temporary file beside it,
// created here exclusively, and attndev renames that file into place. A link planted at the
// figure's path is replaced, never written through, and a reader never sees half a figure.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attndev::app {

// `script` (a file of the scripts folder) run as `python script ARGS... -o TMP`, then TMP renamed
// to `figure`. On failure (no scripts folder, no plotting environment, the script failed) logs
// why, naming `tables` as what was written anyway, and throws CommandExit{1}; a figure path that
// names a folder or a device throws UsageError before anything runs.
void draw_figure(const std::string& script, const std::vector<std::string>& args,
                 const std::filesystem::path& figure, const std::filesystem::path& tables);

// Refuses (UsageError) a figure path that exists as something a rename must not replace: a
// folder, a device, a FIFO. A link or a regular file is fine: it is replaced whole.
void check_figure_path(const std::filesystem::path& figure);

// The source tree this binary was built from: source_tree.cpp, the one unit compiled with its
// path (an absolute path on a unit's command line keeps a compiler cache from serving that unit
// to a clone in another folder).
const char* source_tree();

}  // namespace attndev::app
