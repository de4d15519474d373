#include "exec/container.h"

#include <sstream>

#include "exec/command.h"

namespace tx::exec {

Result<int> RemoveContainersLabelled(const std::vector<std::string>& engine,
                                     const std::vector<std::string>& labels) {
  if (engine.empty() || labels.empty()) return 0;
  std::vector<std::string> list = engine;
  list.insert(list.end(), {"ps", "-a", "-q"});
  for (const auto& label : labels) list.insert(list.end(), {"--filter", "label=" + label});
  TX_ASSIGN_OR_RETURN(CommandResult listed, RunCommand(list, "", {}, 1 << 20, 30'000));
  if (!listed.ok()) {
    return Error::Unavailable(engine[0] + " ps: " + listed.FirstLine());
  }
  std::vector<std::string> remove = engine;
  remove.insert(remove.end(), {"rm", "-f"});
  std::istringstream ids(listed.out);
  int n = 0;
  for (std::string id; ids >> id; ++n) remove.push_back(id);
  if (n == 0) return 0;
  TX_ASSIGN_OR_RETURN(CommandResult removed, RunCommand(remove, "", {}, 1 << 20, 60'000));
  if (!removed.ok()) return Error::Unavailable(engine[0] + " rm: " + removed.FirstLine());
  return n;
}

}  // namespace tx::exec
