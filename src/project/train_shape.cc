// Training shape <-> JSON; see train_shape.h.
#include "project/train_shape.h"

#include "base/diagnostic.h"

namespace trainlock {

nlohmann::json TrainShapeJson(const TrainConfig& config) {
  nlohmann::json shape = {{"parameters", config.model.ParameterCount()}};
  ForEachShapeField(config, [&](const char* name, const auto& field) { shape[name] = field; });
  return shape;
}

namespace {

template <typename T>
T Get(const nlohmann::json& shape, const char* key, const std::string& where) {
  if (!shape.is_object() || !shape.contains(key)) {
    throw InputError(
        Diagnostic{where, {}, std::string("the training shape has no \"") + key + "\"", ""});
  }
  try {
    return shape.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(Diagnostic{where,
                                {},
                                std::string("the training shape's \"") + key +
                                    "\" has the wrong type (" + shape.at(key).dump() + ")",
                                ""});
  }
}

}  // namespace

TrainConfig TrainConfigFromShape(const nlohmann::json& shape, const std::string& where) {
  TrainConfig config;
  config.model.architecture = "llama";
  ForEachShapeField(config, [&](const char* name, auto& field) {
    field = Get<std::remove_cvref_t<decltype(field)>>(shape, name, where);
  });
  return config;
}

}  // namespace trainlock
