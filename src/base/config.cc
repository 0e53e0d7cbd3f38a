#include "base/config.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <unistd.h>

#include "base/log.hpp"

extern char** environ;

namespace cgdr::base {
namespace {

std::atomic<bool> gResolved{false};

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads "NAME = VALUE" lines; '#' starts a comment. Bad lines are reported and skipped.
std::vector<std::pair<std::string, std::string>> readTuningFile(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    CGDR_LOG(kWarn, kInit, "tuning file %s cannot be opened; ignored", path.c_str());
    return out;
  }
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::string t = trim(line);
    if (t.empty()) continue;
    auto eq = t.find('=');
    std::string name = eq == std::string::npos ? "" : trim(t.substr(0, eq));
    if (name.empty()) {
      CGDR_LOG(kWarn, kInit, "%s:%d: expected NAME = VALUE; line ignored", path.c_str(), lineNo);
      continue;
    }
    out.emplace_back(std::move(name), trim(t.substr(eq + 1)));
  }
  return out;
}

}  // namespace

std::optional<bool> parseBool(std::string_view text) {
  std::string t = lower(trim(text));
  if (t == "1" || t == "y" || t == "yes" || t == "on" || t == "true") return true;
  if (t == "0" || t == "n" || t == "no" || t == "off" || t == "false") return false;
  return std::nullopt;
}

std::optional<long long> parseInt(std::string_view text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 0);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

std::optional<std::size_t> parseBytes(std::string_view text) {
  std::string t = lower(trim(text));
  if (t.empty() || t[0] == '-') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  if (errno != 0 || end == t.c_str()) return std::nullopt;
  std::string suffix = trim(end);
  unsigned shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
  else return std::nullopt;
  if (shift && v > (~0ull >> shift)) return std::nullopt;
  return static_cast<std::size_t>(v << shift);
}

std::optional<double> parseDouble(std::string_view text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

SettingBase::SettingBase(const char* name, const char* type, const char* def, const char* units,
                         const char* help, std::initializer_list<const char*> aliases)
    : name_(name), type_(type), default_(def), units_(units), help_(help) {
  for (const char* a : aliases) aliases_.emplace_back(a);
  Registry::instance().add(this);
}

SettingRow SettingBase::row() const {
  ensureResolved();
  std::string aliases;
  for (const auto& a : aliases_) aliases += (aliases.empty() ? "" : ",") + a;
  return {name_, type_, show(), default_, units_, source_, help_, aliases, rangeText()};
}

void SettingBase::ensureResolved() const {
  if (!gResolved.load(std::memory_order_acquire)) Registry::instance().resolveFromProcess();
}

bool SettingBase::answersTo(const std::string& key) const {
  if (key == name_) return true;
  for (const auto& a : aliases_)
    if (a == key) return true;
  return false;
}

void SettingBase::resolve(const EnvLookup& env,
                          const std::vector<std::pair<std::string, std::string>>& file) {
  // The default always parses; it is checked by the unit tests for every setting.
  if (auto why = parseInto(default_)) {
    CGDR_LOG(kError, kInit, "setting %s: default '%s' does not parse: %s", name_.c_str(),
             default_.c_str(), why->c_str());
  }
  source_ = "default";
  std::optional<std::string> text;
  std::string from;
  if ((text = env(name_))) {
    from = "env " + name_;
  } else {
    for (const auto& a : aliases_) {
      if ((text = env(a))) {
        from = "env " + a + " (alias)";
        break;
      }
    }
  }
  if (!text) {
    for (const auto& [k, v] : file) {
      if (answersTo(k)) {
        text = v;
        from = "tuning file";
      }
    }
  }
  if (!text) return;
  if (auto why = parseInto(*text)) {
    CGDR_LOG(kWarn, kInit, "%s='%s' is not valid (%s); using the default '%s'", name_.c_str(),
             text->c_str(), why->c_str(), default_.c_str());
    (void)parseInto(default_);
    source_ = "default (" + from + " invalid)";
    return;
  }
  source_ = from;
}

namespace {
// The values of [r.lo, r.hi] in words: "from A to B", "at least A" or "at most B" where the other
// side is the type's own limit (`noneLo`, `noneHi`), "" where both are; the bounds as `text` writes them.
template <class R, class V, class Text>
std::string rangeWords(const R& r, V noneLo, V noneHi, Text text) {
  if (r.lo == noneLo && r.hi == noneHi) return "";
  if (r.hi == noneHi) return "at least " + text(r.lo);
  if (r.lo == noneLo) return "at most " + text(r.hi);
  return "from " + text(r.lo) + " to " + text(r.hi);
}
// Why a value outside the range is refused: "expected an integer from -2 to 10", "... of at least 1".
std::string outOfRange(const char* what, const std::string& words) {
  return std::string("expected ") + what + (words.rfind("at ", 0) == 0 ? " of " : " ") + words;
}
std::string intText(long long v) { return std::to_string(v); }

// A size as a user would write it (4K, 1G; the suffixes parseBytes takes), else the plain number.
std::string sizeText(std::size_t v) {
  for (auto [shift, suffix] : {std::pair{30, "G"}, {20, "M"}, {10, "K"}})
    if (v != 0 && v % (std::size_t{1} << shift) == 0) return std::to_string(v >> shift) + suffix;
  return std::to_string(v);
}

std::string numberText(double v) {  // (a whole number in full; else 0.9, 1e-06: 6 significant digits)
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}
}  // namespace

template <class T>
std::string Setting<T>::rangeText() const {
  if constexpr (std::same_as<T, long long>) return rangeWords(range_, LLONG_MIN, LLONG_MAX, intText);
  else if constexpr (std::same_as<T, Bytes>) return rangeWords(range_, std::size_t{0}, SIZE_MAX, sizeText);
  else if constexpr (std::same_as<T, double>) return rangeWords(range_, -HUGE_VAL, HUGE_VAL, numberText);
  else return "";  // (bool, string: no range)
}

template <>
std::optional<std::string> Setting<bool>::parseInto(std::string_view t) {
  auto v = parseBool(t);
  if (!v) return "expected 1/0, yes/no, on/off or true/false";
  value_ = *v;
  return std::nullopt;
}
template <>
std::string Setting<bool>::show() const { return value_ ? "1" : "0"; }

template <>
std::optional<std::string> Setting<long long>::parseInto(std::string_view t) {
  auto v = parseInt(t);
  if (!v) return "expected an integer";
  if (*v < range_.lo || *v > range_.hi) return outOfRange("an integer", rangeText());
  value_ = *v;
  return std::nullopt;
}
template <>
std::string Setting<long long>::show() const { return std::to_string(value_); }

template <>
std::optional<std::string> Setting<Bytes>::parseInto(std::string_view t) {
  auto v = parseBytes(t);
  if (!v) return "expected a size such as 8192, 64K, 4M or 1G";
  if (*v < range_.lo || *v > range_.hi) return outOfRange("a size", rangeText());
  value_.value = *v;
  return std::nullopt;
}
template <>
std::string Setting<Bytes>::show() const { return std::to_string(value_.value); }

template <>
std::optional<std::string> Setting<double>::parseInto(std::string_view t) {
  auto v = parseDouble(t);  // (finite)
  if (!v) return "expected a number";
  if (*v < range_.lo || *v > range_.hi) return outOfRange("a number", rangeText());
  value_ = *v;
  return std::nullopt;
}
template <>
std::string Setting<double>::show() const { return std::to_string(value_); }

template <>
std::optional<std::string> Setting<std::string>::parseInto(std::string_view t) {
  value_ = trim(t);
  return std::nullopt;
}
template <>
std::string Setting<std::string>::show() const { return value_; }

namespace {
const char* typeName(bool*) { return "bool"; }
const char* typeName(long long*) { return "int"; }
const char* typeName(Bytes*) { return "size"; }
const char* typeName(double*) { return "number"; }
const char* typeName(std::string*) { return "string"; }
}  // namespace

template <class T>
Setting<T>::Setting(const char* name, const char* def, const char* units, const char* help,
                    std::initializer_list<const char*> aliases)
    : SettingBase(name, typeName(static_cast<T*>(nullptr)), def, units, help, aliases) {}

template class Setting<bool>;
template class Setting<long long>;
template class Setting<Bytes>;
template class Setting<double>;
template class Setting<std::string>;

ChoiceSetting::ChoiceSetting(const char* name, const char* def,
                             std::initializer_list<const char*> choices, const char* help,
                             std::initializer_list<const char*> aliases)
    : SettingBase(name, "choice", def, "", help, aliases) {
  for (const char* c : choices) choices_.emplace_back(c);
}

std::optional<std::string> ChoiceSetting::parseInto(std::string_view text) {
  std::string t = lower(trim(text));
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (choices_[i] == t) {
      value_ = {static_cast<int>(i), choices_[i]};
      return std::nullopt;
    }
  }
  std::string all;
  for (const auto& c : choices_) all += (all.empty() ? "" : "|") + c;
  return "expected one of " + all;
}

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(SettingBase* s) {
  std::lock_guard lock(mutex_);
  settings_.push_back(s);
}

void Registry::resolveAll(const EnvLookup& env) {
  std::lock_guard lock(mutex_);
  std::string tuningPath;
  if (auto t = env("CGDR_TUNING_FILE")) tuningPath = trim(*t);
  auto file = readTuningFile(tuningPath);
  for (SettingBase* s : settings_) s->resolve(env, file);
  unknownInFile_.clear();
  for (const auto& kv : file)
    if (!declares(kv.first)) unknownInFile_.push_back(kv.first);
  resolved_ = true;
  gResolved.store(true, std::memory_order_release);
}

void Registry::resolveFromProcess() {
  if (gResolved.load(std::memory_order_acquire)) return;
  static std::mutex once;
  std::lock_guard lock(once);
  if (!gResolved.load(std::memory_order_acquire)) resolveAll(processEnv());
}

std::vector<SettingRow> Registry::rows() {
  resolveFromProcess();
  std::vector<SettingRow> out;
  std::lock_guard lock(mutex_);
  for (SettingBase* s : settings_) out.push_back(s->row());
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> Registry::badDefaults() {
  std::vector<std::string> out;
  std::lock_guard lock(mutex_);
  for (SettingBase* s : settings_)
    if (s->parseInto(s->default_)) out.push_back(s->name_);
  return out;
}

std::vector<std::string> Registry::unknownCgdrVariables() {
  std::vector<std::string> out;
  std::lock_guard lock(mutex_);
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("CGDR_", 0) != 0) continue;
    std::string key(kv.substr(0, kv.find('=')));
    if (!declares(key)) out.push_back(key);
  }
  return out;
}

std::vector<std::string> Registry::unknownTuningFileNames() {
  std::lock_guard lock(mutex_);
  return unknownInFile_;
}

bool Registry::declares(const std::string& key) const {
  for (const SettingBase* s : settings_)
    if (s->answersTo(key)) return true;
  return false;
}

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Setting<std::string> gTuningFile("CGDR_TUNING_FILE", "", "path",
                                 "File of NAME = VALUE lines read after the environment ('#' starts a comment); "
                                 "bad lines and names no setting declares are reported at start-up.");

}  // namespace cgdr::base
