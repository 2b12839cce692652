#pragma once
// The providers of one family, by backend: each family lists its providers in one table (the
// first of a backend is its default), and every binary that needs one asks that table. Adding a
// backend to a family is one row; the binaries do not change.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/error.hpp"

namespace opbench {

template <class Provider>
struct ProviderEntry {
  Backend backend;
  std::string name;  // what --provider says
  // Empty when this build lacks the backend (no CUDA): the row stays, so --provider cudnn on the
  // CPU still says where cudnn runs.
  std::function<std::unique_ptr<Provider>(int device)> make;
};

// A provider's factory, or none in a build without CUDA.
#ifdef OPBENCH_HAVE_CUDA
#define OPBENCH_CUDA_PROVIDER(factory) (factory)
#else
#define OPBENCH_CUDA_PROVIDER(factory) nullptr
#endif

template <class Provider>
using ProviderTable = std::vector<ProviderEntry<Provider>>;

// The names of `backend`'s providers, its default first.
template <class Provider>
std::vector<std::string> provider_names(const ProviderTable<Provider>& table, Backend backend) {
  std::vector<std::string> out;
  for (const auto& e : table)
    if (e.backend == backend && e.make) out.push_back(e.name);
  return out;
}

// `name` of `backend` (empty: its default), or bad_input naming --provider and what the backend
// offers instead.
template <class Provider>
std::unique_ptr<Provider> make_registered(const ProviderTable<Provider>& table, Backend backend,
                                          const std::string& name, int device) {
  for (const auto& e : table)
    if (e.backend == backend && e.make && (name.empty() || e.name == name)) return e.make(device);
  const auto names = provider_names(table, backend);
  for (const auto& e : table)  // the provider is there, on another backend
    if (e.name == name)
      throw bad_input(
          fmt::format("--provider {}: {} runs with --backend {} (the {} providers are "
                      "{})",
                      name, name, backend_traits(e.backend).name, backend_traits(backend).name,
                      fmt::join(names, ", ")));
  if (names.empty())
    throw bad_input(fmt::format("--backend {}: no provider of this family in this build",
                                backend_traits(backend).name));
  throw bad_input(
      fmt::format("--provider {}: the {} providers are {} (others need another "
                  "--backend)",
                  name, backend_traits(backend).name, fmt::join(names, ", ")));
}

}  // namespace opbench
