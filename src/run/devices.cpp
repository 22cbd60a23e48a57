#include "run/devices.hpp"

#include "measure/backend.hpp"
#include "run/sweep_runner.hpp"

namespace attnprof::run {

DeviceList list_devices(const std::string& which, bool remeasure) {
  DeviceList list;
  auto first = measure::make_backend(which, 0, &list.notices);
  const std::string name = first->name();
  for (int id : resolve_devices({.all = true}, name)) {
    auto backend = id == 0 ? std::move(first) : measure::make_backend(name, id, &list.notices);
    DeviceEntry e;
    e.id = id;
    e.backend = backend->name();
    e.info = backend->device_info();
    e.ceilings = backend->ceilings(remeasure);
    list.devices.push_back(std::move(e));
  }
  return list;
}

}  // namespace attnprof::run
