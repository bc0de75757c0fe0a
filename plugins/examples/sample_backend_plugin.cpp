// A backend plugin as a third party would write one: registers "sample_eager" (replays the capture).
#include "engine/api/backend.h"

namespace {

class SampleEager : public kiln::runtime::Backend {
 public:
  std::string name() const override { return "sample_eager"; }
  std::unique_ptr<kiln::runtime::CompiledFn> compile(const kiln::capture::SpecializedRegion&,
                                                     const kiln::capture::RegionStatic&,
                                                     const kiln::runtime::BackendOptions&,
                                                     kiln::runtime::RegionArtifacts& art) override {
    art.note = "sample plugin: replaying the captured trace";
    return nullptr;
  }
};

}  // namespace

extern "C" void kiln_register_backends() {
  kiln::runtime::register_backend("sample_eager", [] { return std::make_unique<SampleEager>(); });
}
