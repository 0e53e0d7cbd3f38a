// The settings registry: every setting is declared once, next to its component, with type,
// default (a string parsed like user input), units and a sentence of help. Values come from
// the environment (CGDR_* name, then documented aliases such as MV2_*), then the tuning file
// (CGDR_TUNING_FILE), then the default. Nothing outside src/base reads the environment.
#pragma once
#include <climits>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cgdr::base {

// Looks a variable up in some environment (the process's, or a test's).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// One row of the settings table as cgdr-info prints it.
struct SettingRow {
  std::string name, type, value, defaultValue, units, source, help, aliases;
  std::string range;  // the values it takes where its type's are more: "from 4K to 1G", "at least 1"
};

// Type-independent part of a setting; registers itself in the registry on construction.
class SettingBase {
 public:
  SettingBase(const char* name, const char* type, const char* def, const char* units,
              const char* help, std::initializer_list<const char*> aliases);
  SettingBase(const SettingBase&) = delete;
  SettingBase& operator=(const SettingBase&) = delete;
  virtual ~SettingBase() = default;

  const std::string& name() const { return name_; }
  // Whether `key` is this setting's name or one of its aliases (the names a tuning file may use).
  bool answersTo(const std::string& key) const;
  SettingRow row() const;
  // Resolves the value from env/file/default; a bad value falls back to the default with a warning.
  void resolve(const EnvLookup& env, const std::vector<std::pair<std::string, std::string>>& file);

 protected:
  // Parses text into the typed value; returns an explanation on failure.
  virtual std::optional<std::string> parseInto(std::string_view text) = 0;
  virtual std::string show() const = 0;
  virtual std::string rangeText() const { return ""; }
  void ensureResolved() const;

 private:
  std::string name_, type_, default_, units_, help_;
  std::vector<std::string> aliases_;
  std::string source_ = "default";
  friend class Registry;
};

// A size in bytes; accepts suffixes K, M, G (powers of two) with optional "iB"/"B".
struct Bytes {
  std::size_t value = 0;
};

// One choice out of a fixed list, e.g. CGDR_LOCALITY=container|hostname|off.
struct Choice {
  int index = 0;
  std::string name;
};

// The values an integer setting takes; one outside them is invalid (the default, with a warning).
struct IntRange {
  long long lo = LLONG_MIN, hi = LLONG_MAX;
};
// The same for a size setting, in bytes.
struct SizeRange {
  std::size_t lo = 0, hi = SIZE_MAX;
};
// The same for a number setting (the bounds taken).
struct DoubleRange {
  double lo = -HUGE_VAL, hi = HUGE_VAL;
};

// Parsers shared by settings and tests.
std::optional<bool> parseBool(std::string_view text);
std::optional<long long> parseInt(std::string_view text);
std::optional<std::size_t> parseBytes(std::string_view text);
std::optional<double> parseDouble(std::string_view text);

// A typed setting; get() is cheap after the first call.
template <class T>
class Setting final : public SettingBase {
 public:
  Setting(const char* name, const char* def, const char* units, const char* help,
          std::initializer_list<const char*> aliases = {});
  // An integer (IntRange), size (SizeRange) or number (DoubleRange) setting that takes only the
  // values of `range`.
  using Range = std::conditional_t<std::same_as<T, Bytes>, SizeRange,
                                   std::conditional_t<std::same_as<T, double>, DoubleRange, IntRange>>;
  Setting(const char* name, const char* def, const char* units, const char* help, Range range,
          std::initializer_list<const char*> aliases = {})
    requires std::same_as<T, long long> || std::same_as<T, Bytes> || std::same_as<T, double>
      : Setting(name, def, units, help, aliases) {
    range_ = range;
  }
  const T& get() const {
    ensureResolved();
    return value_;
  }

 private:
  std::optional<std::string> parseInto(std::string_view text) override;
  std::string show() const override;
  std::string rangeText() const override;
  T value_{};
  Range range_;  // integer, size and number settings only
};

// A setting whose value is one of a fixed list of names.
class ChoiceSetting final : public SettingBase {
 public:
  ChoiceSetting(const char* name, const char* def, std::initializer_list<const char*> choices,
                const char* help, std::initializer_list<const char*> aliases = {});
  const Choice& get() const {
    ensureResolved();
    return value_;
  }

 private:
  std::optional<std::string> parseInto(std::string_view text) override;
  std::string show() const override { return value_.name; }
  std::vector<std::string> choices_;
  Choice value_;
};

// All settings of the process.
class Registry {
 public:
  static Registry& instance();
  void add(SettingBase* s);
  // Re-reads every setting from the given environment (tests pass a fake one).
  void resolveAll(const EnvLookup& env);
  // Resolves once from the process environment (what the library does at start-up).
  void resolveFromProcess();
  std::vector<SettingRow> rows();
  // Settings that were set but are unknown: CGDR_* names no setting declares.
  std::vector<std::string> unknownCgdrVariables();
  // Names in the tuning file of the last resolveAll that no setting declares (name or alias).
  std::vector<std::string> unknownTuningFileNames();
  bool resolved() const { return resolved_; }
  // Settings whose declared default does not parse (a declaration bug; tested).
  std::vector<std::string> badDefaults();

 private:
  bool declares(const std::string& key) const;  // mutex_ held
  std::vector<SettingBase*> settings_;
  std::vector<std::string> unknownInFile_;
  std::mutex mutex_;
  bool resolved_ = false;
};

// The process environment as an EnvLookup (the one place that calls getenv).
EnvLookup processEnv();

}  // namespace cgdr::base
