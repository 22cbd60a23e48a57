#include "kernels/registry.hpp"

#include <algorithm>

namespace attnprof::kernels {

namespace {
std::vector<const Kernel*>& table() {
  static std::vector<const Kernel*> kernels;
  return kernels;
}
}  // namespace

std::string_view to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

Registrar::Registrar(const Kernel* kernel) { table().push_back(kernel); }

std::vector<const Kernel*> registered(Backend backend) {
  std::vector<const Kernel*> out;
  for (const Kernel* k : table())
    if (k->backend() == backend) out.push_back(k);
  // Registration order depends on link order: sort so "reference" comes before "fused" etc. stably.
  std::stable_sort(out.begin(), out.end(),
                   [](const Kernel* a, const Kernel* b) { return a->name() > b->name(); });
  return out;
}

const Kernel* find(Backend backend, std::string_view name) {
  for (const Kernel* k : table())
    if (k->backend() == backend && k->name() == name) return k;
  return nullptr;
}

}  // namespace attnprof::kernels
