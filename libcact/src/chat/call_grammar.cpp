#include "chat/call_grammar.h"

#include <bit>
#include <cmath>
#include <map>

#include "cact/error.h"
#include "cact/json_input.h"

namespace cact::chat {

namespace {

constexpr std::string_view kCallHead = "{\"name\":";
constexpr std::string_view kArgumentsHead = ",\"arguments\":";
constexpr uint32_t kNoNode = UINT32_MAX;
constexpr uint32_t kMaxProperties = 64;  // an object's written keys are one 64-bit set
constexpr int kMaxDigits = 15;           // digits of a number: exact in a double, distinct doubles

enum FrameKind : uint8_t { kList, kCall, kObject, kArray };
// List: the call frames sit on top of it while phase is calls.
enum ListPhase : uint8_t { kListOpen, kListCalls, kListAfterCall, kListClosed };
enum CallPhase : uint8_t { kCallHeadText, kCallName, kCallArgumentsText, kCallArguments, kCallClose };
enum ObjectPhase : uint8_t {
  kObjectOpen,
  kObjectFirst,
  kObjectComma,
  kObjectKey,
  kObjectColon,
  kObjectValue,
  kObjectAfter
};
enum ArrayPhase : uint8_t { kArrayOpen, kArrayFirst, kArrayValue, kArrayAfter };

enum LeafKind : uint8_t { kNoLeaf, kString, kName, kNumber, kLiteral };
enum StringPhase : uint8_t { kOpen, kText, kEscape, kHex, kLowBackslash, kLowU, kLowHex, kUtf8 };
enum NumberPhase : uint8_t { kStart, kMinus, kZero, kInteger, kDot, kFraction };

uint32_t add(uint32_t a, uint32_t b, uint32_t c = 0) { return add_cost(add_cost(a, b), c); }
uint32_t mul(uint32_t a, uint32_t b) {
  const uint64_t product = uint64_t{a} * b;
  return product >= kNoCompletion ? kNoCompletion : static_cast<uint32_t>(product);
}
uint32_t sub(uint32_t a, uint32_t b) { return a == kNoCompletion ? a : a - b; }  // b <= a by construction

uint64_t bit(uint32_t property) { return uint64_t{1} << property; }

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A UTF-8 lead byte: continuation bytes due and the range of the first one
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
struct Utf8Lead {
  uint8_t continuation = 0, lo = 0x80, hi = 0xBF;
};
std::optional<Utf8Lead> utf8_lead(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return Utf8Lead{1};
  if (b == 0xE0) return Utf8Lead{2, 0xA0, 0xBF};
  if (b == 0xED) return Utf8Lead{2, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return Utf8Lead{2};
  if (b == 0xF0) return Utf8Lead{3, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return Utf8Lead{3};
  if (b == 0xF4) return Utf8Lead{3, 0x80, 0x8F};
  return std::nullopt;
}

// The byte a one-character escape stands for, or -1.
int simple_escape(uint8_t c) {
  switch (c) {
    case '"':
      return '"';
    case '\\':
      return '\\';
    case '/':
      return '/';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return -1;
  }
}

// Whether a literal of `s` passes validate_call (an enum value may break the
// schema's other keywords, e.g. a bound): the decoder writes only those.
bool literal_validates(const Schema& s, const std::string& literal) {
  Schema holder;
  holder.property_names = {"v"};
  holder.properties = {s};
  holder.properties.front().literals.clear();
  holder.required = {true};
  ToolList probe;
  probe.tools.push_back({"probe", "", std::move(holder)});
  return validate_call(probe, {"probe", "{\"v\":" + literal + "}"}).violation == Violation::ok;
}

// The number grid: every value with at most 15 digits, as a multiple of 1e-15
// (CallGrammar::Scaled). A value with d integer digits has 15 - d fraction
// digits, so the grid step at magnitude m is 10^d units. Two grid values never
// round to the same double, so "the double of t satisfies the bound" is a cut
// of the grid.
__extension__ typedef __int128 Wide;

constexpr std::array<Wide, 31> kPow10 = [] {
  std::array<Wide, 31> p{};
  p[0] = 1;
  for (size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * 10;
  return p;
}();
constexpr Wide kOne = kPow10[15];                   // 1.0
constexpr Wide kGridMax = (kPow10[15] - 1) * kOne;  // 999999999999999

int integer_digits(Wide magnitude) {
  int d = 0;
  for (Wide whole = magnitude / kOne; whole > 0; whole /= 10) ++d;
  return d;
}
Wide grid_unit(Wide magnitude) { return kPow10[size_t(integer_digits(magnitude))]; }

Wide grid_next(Wide t);
Wide grid_prev(Wide t) {
  if (t <= 0) return -grid_next(-t);
  return t - grid_unit(t - 1);
}
Wide grid_next(Wide t) {
  if (t < 0) return -grid_prev(-t);
  return t + grid_unit(t);
}

// The double a grid value is read as: N / 10^F with N < 2^53 and F <= 15, one
// correctly rounded division (as strtod gives).
double grid_double(Wide t) {
  const Wide magnitude = t < 0 ? -t : t;
  const int d = integer_digits(magnitude);
  const int fraction = d == 0 ? kMaxDigits : kMaxDigits - d;
  const auto n = static_cast<double>(static_cast<int64_t>(magnitude / kPow10[size_t(kMaxDigits - fraction)]));
  const double value = n / static_cast<double>(static_cast<int64_t>(kPow10[size_t(fraction)]));
  return t < 0 ? -value : value;
}

// The smallest grid value whose double is >= b (> b when `strict`);
// kGridMax + 1 when there is none.
Wide grid_at_least(double b, bool strict) {
  const auto passes = [&](Wide t) { return strict ? grid_double(t) > b : grid_double(t) >= b; };
  if (!passes(kGridMax)) return kGridMax + 1;
  if (passes(-kGridMax)) return -kGridMax;
  // A grid value within a step or two of b, then the exact cut.
  const double magnitude = std::fabs(b);
  int d = 0;
  for (double whole = std::floor(magnitude); whole >= 1 && d < kMaxDigits; whole = std::floor(whole / 10)) ++d;
  const int fraction = d == 0 ? kMaxDigits : kMaxDigits - d;
  const auto n = static_cast<int64_t>(std::llround(b * std::pow(10.0, fraction)));
  Wide t = Wide{n} * kPow10[size_t(kMaxDigits - fraction)];
  t = std::clamp(t, -kGridMax, kGridMax);
  while (!passes(t)) t = grid_next(t);
  while (t > -kGridMax && passes(grid_prev(t))) t = grid_prev(t);
  return t;
}

// The fewest fraction digits F in [min_f, max_f] such that a multiple of
// 10^-F lies in [a, b] ∩ [lo, hi] (a >= 0), or -1.
int fewest_fraction_digits(Wide a, Wide b, Wide lo, Wide hi, int min_f, int max_f) {
  const Wide u = std::max(a, lo), v = std::min(b, hi);
  if (u > v) return -1;
  for (int f = min_f; f <= max_f; ++f) {
    const Wide q = kPow10[size_t(kMaxDigits - f)];
    const Wide first = (u + q - 1) / q * q;
    if (first <= v) return f;
  }
  return -1;
}

}  // namespace

uint32_t CallGrammar::number_cost(const NumberSpec& spec, const Leaf& l) {
  if (l.phase == kStart) return spec.start_cost;
  if (l.phase == kMinus) return spec.minus_cost;
  // Work on magnitudes: a negative prefix sees the window mirrored.
  const Wide lo = l.negative ? -spec.hi : spec.lo, hi = l.negative ? -spec.lo : spec.hi;
  const int k = l.int_digits;
  const auto digits = static_cast<Wide>(l.digits);
  switch (l.phase) {
    case kZero: {
      const int f = fewest_fraction_digits(0, spec.integer ? 0 : kOne - 1, lo, hi, 0, spec.integer ? 0 : kMaxDigits);
      return f < 0 ? kNoCompletion : static_cast<uint32_t>(f == 0 ? 0 : f + 1);
    }
    case kInteger: {
      // j more integer digits, then maybe a fraction.
      uint32_t best = kNoCompletion;
      for (int j = 0; k + j <= kMaxDigits && uint32_t(j) < best; ++j) {
        const Wide a = digits * kPow10[size_t(j)] * kOne;
        const Wide next = (digits + 1) * kPow10[size_t(j)];
        const Wide b = spec.integer ? (next - 1) * kOne : next * kOne - kPow10[size_t(k + j)];
        const int f = fewest_fraction_digits(a, b, lo, hi, 0, spec.integer ? 0 : kMaxDigits - k - j);
        if (f >= 0) best = std::min(best, static_cast<uint32_t>(j + (f == 0 ? 0 : f + 1)));
      }
      return best;
    }
    case kDot: {
      const Wide a = digits * kOne;
      const int f = fewest_fraction_digits(a, a + kOne - kPow10[size_t(k)], lo, hi, 1, kMaxDigits - k);
      return f < 0 ? kNoCompletion : static_cast<uint32_t>(f);
    }
    case kFraction: {
      const int m = l.frac_digits;
      const Wide a = digits * kPow10[size_t(kMaxDigits - m)];
      const int f =
          fewest_fraction_digits(a, a + kPow10[size_t(kMaxDigits - m)] - kPow10[size_t(k)], lo, hi, m, kMaxDigits - k);
      return f < 0 ? kNoCompletion : static_cast<uint32_t>(f - m);
    }
    default:
      return kNoCompletion;
  }
}

bool CallGrammar::number_closes(const NumberSpec& spec, const Leaf& l) {
  Wide value = 0;
  switch (l.phase) {
    case kZero:
      break;
    case kInteger:
      value = static_cast<Wide>(l.digits) * kOne;
      break;
    case kFraction:
      value = static_cast<Wide>(l.digits) * kPow10[size_t(kMaxDigits - l.frac_digits)];
      break;
    default:
      return false;
  }
  if (l.negative) value = -value;
  return spec.lo <= value && value <= spec.hi;
}

void CallGrammar::compile_number(Node& n, const Schema& s) {
  NumberSpec spec;
  spec.integer = s.type == JsonType::integer;
  if (spec.integer) {
    // Integers of the grid are exact doubles: the bounds round inward.
    const auto whole = [](double b) {
      return static_cast<Wide>(static_cast<int64_t>(std::clamp(b, -1e16, 1e16))) * kOne;
    };
    spec.lo = s.minimum ? whole(s.exclusive_minimum ? std::floor(*s.minimum) + 1 : std::ceil(*s.minimum)) : -kGridMax;
    spec.hi = s.maximum ? whole(s.exclusive_maximum ? std::ceil(*s.maximum) - 1 : std::floor(*s.maximum)) : kGridMax;
    spec.lo = std::max(spec.lo, -kGridMax);
    spec.hi = std::min(spec.hi, kGridMax);
  } else {
    spec.lo = s.minimum ? grid_at_least(*s.minimum, s.exclusive_minimum) : -kGridMax;
    spec.hi = s.maximum ? -grid_at_least(-*s.maximum, s.exclusive_maximum) : kGridMax;
  }
  if (spec.lo <= spec.hi) {
    const auto cost_of = [&](uint8_t phase, bool negative, uint64_t digits) {
      Leaf l;
      l.phase = phase;
      l.negative = negative;
      l.digits = digits;
      l.int_digits = phase == kInteger ? 1 : 0;
      return add(1, number_cost(spec, l));
    };
    spec.minus_cost = spec.integer ? kNoCompletion : cost_of(kZero, true, 0);
    spec.start_cost = cost_of(kZero, false, 0);
    for (uint64_t d = 1; d <= 9; ++d) {
      spec.minus_cost = std::min(spec.minus_cost, cost_of(kInteger, true, d));
      spec.start_cost = std::min(spec.start_cost, cost_of(kInteger, false, d));
    }
    spec.start_cost = std::min(spec.start_cost, add(1, spec.minus_cost));
  }
  n.kind = NodeKind::number;
  n.number = static_cast<uint32_t>(numbers_.size());
  n.min_bytes = spec.start_cost;
  numbers_.push_back(spec);
}

// ---------------------------------------------------------------------------
// Compilation.

uint32_t CallGrammar::add_trie(const std::vector<std::string>& texts, const std::vector<int32_t>& values,
                               const std::vector<uint32_t>& terminal_costs) {
  struct Building {
    std::map<uint8_t, uint32_t> kids;
    int32_t terminal = -1;
    uint32_t cost = kNoCompletion;
  };
  std::vector<Building> b(1);
  for (size_t i = 0; i < texts.size(); ++i) {
    uint32_t at = 0;
    for (const char ch : texts[i]) {
      const auto c = static_cast<uint8_t>(ch);
      auto it = b[at].kids.find(c);
      if (it == b[at].kids.end()) {
        it = b[at].kids.emplace(c, static_cast<uint32_t>(b.size())).first;
        b.emplace_back();
      }
      at = it->second;
    }
    if (b[at].terminal < 0 || terminal_costs[i] < b[at].cost) {
      b[at].terminal = values[i];
      b[at].cost = terminal_costs[i];
    }
  }
  // Breadth-first, so each node's edges are contiguous and children follow parents.
  const auto root = static_cast<uint32_t>(trie_.size());
  std::vector<uint32_t> order{0}, index_of(b.size());
  for (size_t q = 0; q < order.size(); ++q) {
    for (const auto& [c, kid] : b[order[q]].kids) order.push_back(kid);
  }
  for (size_t q = 0; q < order.size(); ++q) index_of[order[q]] = root + static_cast<uint32_t>(q);
  trie_.resize(trie_.size() + order.size());
  for (size_t q = 0; q < order.size(); ++q) {
    const Building& from = b[order[q]];
    TrieNode& node = trie_[root + q];
    node.terminal = from.terminal;
    node.first_edge = static_cast<uint32_t>(edges_.size());
    node.edge_count = static_cast<uint32_t>(from.kids.size());
    for (const auto& [c, kid] : from.kids) {
      edges_.push_back({c, index_of[kid]});
      trie_[index_of[kid]].depth = node.depth + 1;
    }
  }
  for (size_t q = order.size(); q-- > 0;) {
    TrieNode& node = trie_[root + q];
    const Building& from = b[order[q]];
    node.min_cost = from.terminal >= 0 ? from.cost : kNoCompletion;
    if (from.terminal >= 0 && from.terminal < int32_t(kMaxProperties)) node.keys = bit(uint32_t(from.terminal));
    for (uint32_t e = node.first_edge; e < node.first_edge + node.edge_count; ++e) {
      const TrieNode& kid = trie_[edges_[e].to];
      node.min_cost = std::min(node.min_cost, add(1, kid.min_cost));
      node.keys |= kid.keys;
    }
  }
  return root;
}

uint32_t CallGrammar::trie_child(uint32_t node, uint8_t byte) const {
  const TrieNode& n = trie_[node];
  for (uint32_t e = n.first_edge; e < n.first_edge + n.edge_count; ++e) {
    if (edges_[e].byte == byte) return edges_[e].to;
  }
  return kNoNode;
}

uint32_t CallGrammar::literal_trie(const std::vector<std::string>& literals) {
  std::vector<int32_t> values;
  for (size_t i = 0; i < literals.size(); ++i) values.push_back(static_cast<int32_t>(i));
  for (const std::string& text : literals) bytes_written_ += text;
  return add_trie(literals, values, std::vector<uint32_t>(literals.size(), 0));
}

void CallGrammar::compile_object(Node& n, const Schema& s, uint32_t depth) {
  const size_t count = s.property_names.size();
  if (count > kMaxProperties) {
    fail("tool list: an object schema declares " + std::to_string(count) +
         " properties; the constrained decoder tracks at most " + std::to_string(kMaxProperties) + " per object");
  }
  std::vector<uint32_t> value_nodes;
  for (const Schema& p : s.properties) value_nodes.push_back(compile(p, depth + 1));
  n.kind = NodeKind::object;
  n.first_property = static_cast<uint32_t>(properties_.size());
  n.property_count = static_cast<uint32_t>(count);
  std::vector<std::string> keys;
  std::vector<int32_t> values;
  uint32_t required_bytes = 0, required_count = 0;
  for (size_t i = 0; i < count; ++i) {
    keys.push_back(compact(Json(s.property_names[i])));
    bytes_written_ += keys.back();
    values.push_back(static_cast<int32_t>(i));
    const uint32_t entry = add(static_cast<uint32_t>(keys.back().size()) + 2, nodes_[value_nodes[i]].min_bytes);
    properties_.push_back({value_nodes[i], entry});
    n.all |= bit(uint32_t(i));
    if (i < s.required.size() && s.required[i]) {
      n.required |= bit(uint32_t(i));
      required_bytes = add(required_bytes, entry);
      ++required_count;
    }
  }
  n.trie = add_trie(keys, values, std::vector<uint32_t>(count, 0));
  // "{" + the required entries (the first without its comma) + "}"
  n.min_bytes = required_count == 0 ? 2 : add(sub(required_bytes, 1), 2);
}

uint32_t CallGrammar::compile(const Schema& s, uint32_t depth) {
  max_depth_ = std::max(max_depth_, depth);
  if (depth > kMaxFrames - 2)
    fail("tool list: a schema nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  Node n;
  if (!s.literals.empty()) {
    std::vector<std::string> valid;
    for (const std::string& literal : s.literals) {
      if (literal_validates(s, literal)) valid.push_back(literal);
    }
    n.kind = NodeKind::literal;
    n.trie = literal_trie(valid);
    n.min_bytes = trie_[n.trie].min_cost;
  } else {
    switch (s.type) {
      case JsonType::string:
        n.kind = NodeKind::string;
        n.min_length = s.min_length;
        n.max_length = s.max_length.value_or(UINT32_MAX);
        n.min_bytes = n.max_length < n.min_length ? kNoCompletion : add(2, n.min_length);
        break;
      case JsonType::integer:
      case JsonType::number:
        compile_number(n, s);
        break;
      case JsonType::boolean:
      case JsonType::null:
        n.kind = NodeKind::literal;
        n.trie = literal_trie(s.type == JsonType::null ? std::vector<std::string>{"null"}
                                                       : std::vector<std::string>{"true", "false"});
        n.min_bytes = trie_[n.trie].min_cost;
        break;
      case JsonType::array: {
        if (s.items.size() != 1) fail("tool list: an array schema needs exactly one \"items\" schema");
        n.kind = NodeKind::array;
        n.item = compile(s.items.front(), depth + 1);
        n.min_items = s.min_items;
        n.max_items = s.max_items.value_or(UINT32_MAX);
        const uint32_t item = nodes_[n.item].min_bytes;
        n.min_bytes = n.max_items < n.min_items ? kNoCompletion
                      : n.min_items == 0        ? 2
                                                : add(mul(n.min_items, add(item, 1)), 1);
        break;
      }
      case JsonType::object:
        compile_object(n, s, depth);
        break;
    }
  }
  nodes_.push_back(n);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

CallGrammar::CallGrammar(const ToolList& tools, const ToolChoice& choice) : mode_(choice.mode) {
  for (const Tool& t : tools.tools) {
    tool_nodes_.push_back(compile(t.parameters, 1));
    tool_rest_.push_back(add(static_cast<uint32_t>(kArgumentsHead.size()) + 1, nodes_[tool_nodes_.back()].min_bytes));
  }
  std::vector<size_t> callable;  // the tools a call may name
  for (size_t i = 0; i < tools.tools.size(); ++i) {
    if (mode_ == ToolChoiceMode::named && tools.tools[i].name != choice.name) continue;
    callable.push_back(i);
  }
  if (mode_ == ToolChoiceMode::named && callable.empty())
    fail("tool choice: \"" + choice.name + "\" is not in the tool list");
  std::vector<std::string> names;
  std::vector<int32_t> values;
  std::vector<uint32_t> costs;
  for (const size_t i : callable) {
    if (mode_ != ToolChoiceMode::auto_ && tool_rest_[i] == kNoCompletion) continue;  // never completes
    const std::string json_name = compact(Json(tools.tools[i].name));
    bytes_written_ += json_name;
    // Under auto the name is any string, matched by its decoded bytes.
    names.push_back(mode_ == ToolChoiceMode::auto_ ? tools.tools[i].name : json_name);
    values.push_back(static_cast<int32_t>(i));
    costs.push_back(tool_rest_[i]);
    min_call_ = std::min(min_call_, add(static_cast<uint32_t>(kCallHead.size() + json_name.size()), tool_rest_[i]));
  }
  if (mode_ != ToolChoiceMode::auto_ && min_call_ == kNoCompletion) {
    fail(mode_ == ToolChoiceMode::named
             ? "tool choice: no arguments satisfy the schema of \"" + choice.name + "\""
             : std::string("tool choice required: no listed tool has arguments that satisfy its schema"));
  }
  name_trie_ = add_trie(names, values, costs);
}

// ---------------------------------------------------------------------------
// Stepping.

CallGrammar::State CallGrammar::start() const {
  State s;
  s.depth = 1;
  s.frames[0] = Frame{0, 0, 0, 0, kList, kListOpen};
  return s;
}

bool CallGrammar::closed(const State& s) const {
  return !s.stopped && s.depth == 1 && s.frames[0].phase == kListClosed;
}

bool CallGrammar::in_free_name(const State& s) const { return s.leaf.kind == kName && s.leaf.phase != kOpen; }

void CallGrammar::push_frame(State& s, uint8_t kind, uint32_t node, uint32_t outer) const {
  s.frames[s.depth++] = Frame{node, outer, 0, 0, kind, 0};
}

void CallGrammar::push_value(State& s, uint32_t node, uint32_t outer) const {
  const Node& n = nodes_[node];
  switch (n.kind) {
    case NodeKind::object:
      push_frame(s, kObject, node, outer);
      return;
    case NodeKind::array:
      push_frame(s, kArray, node, outer);
      return;
    case NodeKind::string:
      s.leaf = Leaf{.kind = kString, .node = node};
      break;
    case NodeKind::number:
      s.leaf = Leaf{.kind = kNumber, .node = node};
      break;
    case NodeKind::literal:
      s.leaf = Leaf{.kind = kLiteral, .trie = n.trie};
      break;
  }
  s.leaf.outer = outer;
}

void CallGrammar::child_closed(State& s, int32_t value) const {
  Frame& f = s.frames[s.depth - 1];
  switch (f.kind) {
    case kList:
      f.phase = kListAfterCall;
      break;
    case kCall:
      if (f.phase == kCallName) {
        f.node = static_cast<uint32_t>(value);
        f.phase = kCallArgumentsText;
        f.aux = 0;
      } else {
        f.phase = kCallClose;
      }
      break;
    case kObject:
      f.phase = kObjectAfter;
      break;
    case kArray:
      f.phase = kArrayAfter;
      break;
  }
}

CallGrammar::Step CallGrammar::step(State& s, uint8_t byte) const {
  if (s.stopped) return Step::refused;
  if (s.leaf.kind != kNoLeaf) {
    bool consumed = true;
    const Step r = step_leaf(s, byte, consumed);
    if (r != Step::ok || consumed) return r;
    // The value ended before this byte: its container takes it.
  }
  return step_frame(s, byte);
}

CallGrammar::Step CallGrammar::step_leaf(State& s, uint8_t byte, bool& consumed) const {
  Leaf& l = s.leaf;
  switch (l.kind) {
    case kString:
    case kName:
      return step_string(s, byte);
    case kNumber:
      return step_number(s, byte, consumed);
    case kLiteral: {
      const uint32_t next = trie_child(l.trie, byte);
      if (next != kNoNode) {
        l.trie = next;
        if (trie_[next].edge_count == 0) {  // nothing extends it: close now
          l.kind = kNoLeaf;
          child_closed(s, trie_[next].terminal);
        }
        return Step::ok;
      }
      if (trie_[l.trie].terminal < 0) return Step::refused;
      const int32_t value = trie_[l.trie].terminal;
      l.kind = kNoLeaf;
      child_closed(s, value);
      consumed = false;
      return Step::ok;
    }
    default:
      return Step::refused;
  }
}

// A code point begins: within maxLength?
bool CallGrammar::take_code_point(Leaf& l) const {
  if (l.kind == kString && l.code_points >= nodes_[l.node].max_length) return false;
  ++l.code_points;
  return true;
}

// Under auto, follow the name's decoded bytes through the trie of listed names.
void CallGrammar::name_bytes(Leaf& l, uint32_t cp) const {
  if (l.kind != kName || l.trie == kNoNode) return;
  uint8_t buf[4];
  size_t n = 0;
  if (cp < 0x80) {
    buf[n++] = static_cast<uint8_t>(cp);
  } else if (cp < 0x800) {
    buf[n++] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    buf[n++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    buf[n++] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    buf[n++] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    buf[n++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else {
    buf[n++] = static_cast<uint8_t>(0xF0 | (cp >> 18));
    buf[n++] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
    buf[n++] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    buf[n++] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
  for (size_t i = 0; i < n && l.trie != kNoNode; ++i) l.trie = trie_child(l.trie, buf[i]);
}

CallGrammar::Step CallGrammar::close_string(State& s) const {
  Leaf& l = s.leaf;
  if (l.kind == kString) {
    if (l.code_points < nodes_[l.node].min_length) return Step::refused;
    l.kind = kNoLeaf;
    child_closed(s, -1);
    return Step::ok;
  }
  const int32_t tool = l.trie == kNoNode ? -1 : trie_[l.trie].terminal;
  l.kind = kNoLeaf;
  if (tool < 0) {
    s.stopped = true;
    return Step::unlisted;
  }
  child_closed(s, tool);
  return Step::ok;
}

CallGrammar::Step CallGrammar::step_string(State& s, uint8_t b) const {
  Leaf& l = s.leaf;
  switch (l.phase) {
    case kOpen:
      if (b != '"') return Step::refused;
      l.phase = kText;
      return Step::ok;
    case kText:
      if (b == '"') return close_string(s);
      if (b == '\\') {
        if (!take_code_point(l)) return Step::refused;
        l.phase = kEscape;
        return Step::ok;
      }
      if (b < 0x20) return Step::refused;
      if (b < 0x80) {
        if (!take_code_point(l)) return Step::refused;
        name_bytes(l, b);
        return Step::ok;
      }
      if (const auto lead = utf8_lead(b); lead && take_code_point(l)) {
        l.phase = kUtf8;
        l.pending = lead->continuation;
        l.lo = lead->lo;
        l.hi = lead->hi;
        if (l.kind == kName && l.trie != kNoNode) l.trie = trie_child(l.trie, b);
        return Step::ok;
      }
      return Step::refused;
    case kUtf8:
      if (b < l.lo || b > l.hi) return Step::refused;
      if (l.kind == kName && l.trie != kNoNode) l.trie = trie_child(l.trie, b);
      l.lo = 0x80;
      l.hi = 0xBF;
      if (--l.pending == 0) l.phase = kText;
      return Step::ok;
    case kEscape: {
      if (b == 'u') {
        l.phase = kHex;
        l.pending = 4;
        l.hex = 0;
        return Step::ok;
      }
      const int c = simple_escape(b);
      if (c < 0) return Step::refused;
      name_bytes(l, static_cast<uint32_t>(c));
      l.phase = kText;
      return Step::ok;
    }
    case kHex:
    case kLowHex: {
      const int h = hex_value(b);
      if (h < 0) return Step::refused;
      const bool low = l.phase == kLowHex;
      uint16_t& v = low ? l.low_hex : l.hex;
      v = static_cast<uint16_t>(v * 16 + h);
      --l.pending;
      // A low surrogate only right after a high one, and then only a low one.
      if (low && l.pending == 3 && v != 0xD) return Step::refused;
      if (l.pending == 2 && (v >= 0xDC && v <= 0xDF) != low) return Step::refused;
      if (l.pending > 0) return Step::ok;
      if (!low && l.hex >= 0xD800 && l.hex <= 0xDBFF) {
        l.phase = kLowBackslash;
        return Step::ok;
      }
      const uint32_t cp = low ? 0x10000 + ((uint32_t{l.hex} - 0xD800) << 10) + (uint32_t{l.low_hex} - 0xDC00) : l.hex;
      name_bytes(l, cp);
      l.phase = kText;
      return Step::ok;
    }
    case kLowBackslash:
      if (b != '\\') return Step::refused;
      l.phase = kLowU;
      return Step::ok;
    case kLowU:
      if (b != 'u') return Step::refused;
      l.phase = kLowHex;
      l.pending = 4;
      l.low_hex = 0;
      return Step::ok;
    default:
      return Step::refused;
  }
}

CallGrammar::Step CallGrammar::step_number(State& s, uint8_t b, bool& consumed) const {
  Leaf& l = s.leaf;
  const NumberSpec& spec = numbers_[nodes_[l.node].number];
  const bool digit = b >= '0' && b <= '9';
  const auto d = static_cast<uint64_t>(b - '0');
  switch (l.phase) {
    case kStart:
    case kMinus:
      if (b == '-' && l.phase == kStart) {
        l.phase = kMinus;
        l.negative = true;
      } else if (b == '0' && !(spec.integer && l.negative)) {  // no "-0" integer
        l.phase = kZero;
      } else if (digit && b != '0') {
        l.phase = kInteger;
        l.digits = d;
        l.int_digits = 1;
      } else {
        return Step::refused;
      }
      return Step::ok;
    case kZero:
    case kInteger:
      if (digit && l.phase == kInteger && l.int_digits < kMaxDigits) {
        l.digits = l.digits * 10 + d;
        ++l.int_digits;
        return Step::ok;
      }
      if (b == '.' && !spec.integer && l.int_digits < kMaxDigits) {
        l.phase = kDot;
        return Step::ok;
      }
      break;
    case kDot:
      if (!digit) return Step::refused;
      l.phase = kFraction;
      l.digits = l.digits * 10 + d;
      l.frac_digits = 1;
      return Step::ok;
    case kFraction:
      if (digit && l.int_digits + l.frac_digits < kMaxDigits) {
        l.digits = l.digits * 10 + d;
        ++l.frac_digits;
        return Step::ok;
      }
      break;
    default:
      return Step::refused;
  }
  // Not a digit of this number: it ends here if its value is in range.
  if (!number_closes(spec, l)) return Step::refused;
  l.kind = kNoLeaf;
  child_closed(s, -1);
  consumed = false;
  return Step::ok;
}

bool CallGrammar::step_key(Frame& f, uint32_t from, uint8_t byte) const {
  const uint32_t next = trie_child(from, byte);
  if (next == kNoNode || (trie_[next].keys & ~f.seen) == 0) return false;  // no unwritten key this way
  if (trie_[next].edge_count == 0) {                                       // the closing quote: a whole key
    const auto property = static_cast<uint32_t>(trie_[next].terminal);
    f.seen |= bit(property);
    f.aux = property;
    f.phase = kObjectColon;
  } else {
    f.aux = next;
    f.phase = kObjectKey;
  }
  return true;
}

CallGrammar::Step CallGrammar::step_frame(State& s, uint8_t b) const {
  if (s.depth == 0) return Step::refused;
  Frame& f = s.frames[s.depth - 1];
  const auto ok = [](bool taken) { return taken ? Step::ok : Step::refused; };
  switch (f.kind) {
    case kList:
      if ((f.phase == kListOpen && b == '[') || (f.phase == kListAfterCall && b == ',')) {
        f.phase = kListCalls;
        push_frame(s, kCall, 0, add(1, f.outer));
        return Step::ok;
      }
      if (f.phase == kListAfterCall && b == ']') {
        f.phase = kListClosed;
        return Step::ok;
      }
      return Step::refused;
    case kCall: {
      if (f.phase == kCallClose) {
        if (b != '}') return Step::refused;
        --s.depth;
        child_closed(s, -1);
        return Step::ok;
      }
      const bool head = f.phase == kCallHeadText;
      if (!head && f.phase != kCallArgumentsText) return Step::refused;
      const std::string_view text = head ? kCallHead : kArgumentsHead;
      if (b != static_cast<uint8_t>(text[f.aux])) return Step::refused;
      if (++f.aux < text.size()) return Step::ok;
      if (head) {
        f.phase = kCallName;
        s.leaf = mode_ == ToolChoiceMode::auto_ ? Leaf{.kind = kName, .trie = name_trie_}
                                                : Leaf{.kind = kLiteral, .trie = name_trie_};
        s.leaf.outer = f.outer;
      } else {
        f.phase = kCallArguments;
        push_value(s, tool_nodes_[f.node], add(1, f.outer));
      }
      return Step::ok;
    }
    case kObject: {
      const Node& n = nodes_[f.node];
      switch (f.phase) {
        case kObjectOpen:
          if (b != '{') return Step::refused;
          f.phase = kObjectFirst;
          return Step::ok;
        case kObjectFirst:
        case kObjectAfter:
          if (b == '}') {
            if ((n.required & ~f.seen) != 0) return Step::refused;
            --s.depth;
            child_closed(s, -1);
            return Step::ok;
          }
          if (f.phase == kObjectAfter) {
            if (b != ',' || (n.all & ~f.seen) == 0) return Step::refused;
            f.phase = kObjectComma;
            return Step::ok;
          }
          return ok(step_key(f, n.trie, b));
        case kObjectComma:
          return ok(step_key(f, n.trie, b));
        case kObjectKey:
          return ok(step_key(f, f.aux, b));
        case kObjectColon: {
          if (b != ':') return Step::refused;
          f.phase = kObjectValue;
          const Property& p = properties_[n.first_property + f.aux];
          push_value(s, p.node, add(required_after(n, f.seen), 1, f.outer));
          return Step::ok;
        }
        default:
          return Step::refused;
      }
    }
    case kArray: {
      const Node& n = nodes_[f.node];
      switch (f.phase) {
        case kArrayOpen:
          if (b != '[') return Step::refused;
          f.phase = kArrayFirst;
          return Step::ok;
        case kArrayFirst:
        case kArrayAfter:
          if (b == ']') {
            if (f.aux < n.min_items) return Step::refused;
            --s.depth;
            child_closed(s, -1);
            return Step::ok;
          }
          {
            const bool first = f.phase == kArrayFirst;
            if (f.aux >= n.max_items || (!first && b != ',')) return Step::refused;
            ++f.aux;
            f.phase = kArrayValue;
            push_value(s, n.item, add(item_rest(n, f.aux), f.outer));
            // After '[' this byte already starts the item.
            return first ? step(s, b) : Step::ok;
          }
        default:
          return Step::refused;
      }
    }
    default:
      return Step::refused;
  }
}

// ---------------------------------------------------------------------------
// Costs: the fewest bytes that close the list.

uint32_t CallGrammar::required_after(const Node& n, uint64_t seen) const {
  uint32_t total = 0;
  for (uint64_t left = n.required & ~seen; left != 0; left &= left - 1) {
    total = add(total, properties_[n.first_property + uint32_t(std::countr_zero(left))].entry_bytes);
  }
  return total;
}

uint32_t CallGrammar::item_rest(const Node& n, uint32_t items) const {
  const uint32_t missing = items >= n.min_items ? 0 : n.min_items - items;
  return add(mul(missing, add(nodes_[n.item].min_bytes, 1)), 1);
}

// Inside a key at `trie_node`: finish one of the unwritten keys below it, its
// value, the required keys still missing, '}'.
uint32_t CallGrammar::key_cost(const Node& n, uint64_t seen, uint32_t trie_node) const {
  const uint32_t required = required_after(n, seen);
  const uint32_t depth = trie_[trie_node].depth;
  uint32_t best = kNoCompletion;
  for (uint64_t left = trie_[trie_node].keys & ~seen; left != 0; left &= left - 1) {
    const auto k = static_cast<uint32_t>(std::countr_zero(left));
    const uint32_t entry = properties_[n.first_property + k].entry_bytes;
    const uint32_t others = (n.required & bit(k)) != 0 ? sub(required, entry) : required;
    best = std::min(best, add(sub(entry, 1 + depth), others, 1));
  }
  return best;
}

uint32_t CallGrammar::frame_cost(const Frame& f) const {
  switch (f.kind) {
    case kList:
      if (f.phase == kListOpen) return add(min_call_, 2);
      if (f.phase == kListAfterCall) return 1;
      return f.phase == kListClosed ? 0 : kNoCompletion;
    case kCall:
      if (f.phase == kCallHeadText) return sub(min_call_, f.aux);
      if (f.phase == kCallArgumentsText) return sub(tool_rest_[f.node], f.aux);
      return f.phase == kCallClose ? 1 : kNoCompletion;
    case kObject: {
      const Node& n = nodes_[f.node];
      const uint32_t required = required_after(n, f.seen);
      switch (f.phase) {
        case kObjectOpen:
          return n.min_bytes;
        case kObjectFirst:
          return (n.required & ~f.seen) != 0 ? required : 1;
        case kObjectComma: {
          if ((n.required & ~f.seen) != 0) return required;
          uint32_t best = kNoCompletion;  // a comma was written: some key must follow
          for (uint64_t left = n.all & ~f.seen; left != 0; left &= left - 1) {
            best = std::min(best, properties_[n.first_property + uint32_t(std::countr_zero(left))].entry_bytes);
          }
          return best;
        }
        case kObjectKey:
          return key_cost(n, f.seen, f.aux);
        case kObjectColon:
          return add(nodes_[properties_[n.first_property + f.aux].node].min_bytes, required, 2);
        case kObjectAfter:
          return add(required, 1);
        default:
          return kNoCompletion;
      }
    }
    case kArray: {
      const Node& n = nodes_[f.node];
      if (f.phase == kArrayOpen) return n.min_bytes;
      if (f.phase == kArrayFirst) return n.min_items == 0 ? 1 : sub(item_rest(n, 0), 1);
      return f.phase == kArrayAfter ? item_rest(n, f.aux) : kNoCompletion;
    }
    default:
      return kNoCompletion;
  }
}

// Bytes that finish the code point being written (escape, surrogate pair, UTF-8).
uint32_t CallGrammar::string_pending(const Leaf& l) const {
  switch (l.phase) {
    case kEscape:
      return 1;
    case kHex: {
      // Two digits in the high-surrogate range commit to a "\uDC00" after.
      const bool high =
          l.pending <= 2 && (l.hex >> (4 * (2 - l.pending))) >= 0xD8 && (l.hex >> (4 * (2 - l.pending))) <= 0xDB;
      return l.pending + (high ? 6u : 0u);
    }
    case kLowBackslash:
      return 6;
    case kLowU:
      return 5;
    case kLowHex:
    case kUtf8:
      return l.pending;
    default:
      return 0;
  }
}

uint32_t CallGrammar::leaf_cost(const Leaf& l) const {
  switch (l.kind) {
    case kString: {
      const Node& n = nodes_[l.node];
      if (l.phase == kOpen) return add(n.min_bytes, l.outer);
      const uint32_t padding = l.code_points >= n.min_length ? 0 : n.min_length - l.code_points;
      return add(string_pending(l), padding, add(1, l.outer));
    }
    case kName: {
      if (l.phase == kOpen) return add(sub(min_call_, static_cast<uint32_t>(kCallHead.size())), l.outer);
      // Close it as it is (an unlisted name stops the list), or, when it is a
      // listed name or a code point is still open, one more character first.
      const uint32_t pending = string_pending(l);
      const bool listed = l.trie != kNoNode && trie_[l.trie].terminal >= 0;
      return pending + (pending == 0 && !listed ? 1 : 2);
    }
    case kNumber:
      return add(number_cost(numbers_[nodes_[l.node].number], l), l.outer);
    case kLiteral:
      return add(trie_[l.trie].min_cost, l.outer);
    default:
      return kNoCompletion;
  }
}

uint32_t CallGrammar::min_bytes_to_complete(const State& s) const {
  if (s.stopped) return 0;
  if (s.leaf.kind != kNoLeaf) return leaf_cost(s.leaf);
  const Frame& top = s.frames[s.depth - 1];
  return add(frame_cost(top), top.outer);
}

std::optional<CallGrammar::TextRoom> CallGrammar::string_text_room(const State& s, uint32_t bytes_left) const {
  const Leaf& l = s.leaf;
  if ((l.kind != kString && l.kind != kName) || l.phase != kText) return std::nullopt;
  if (l.kind == kName) {
    // Text leaves a name that closes in two bytes at most, in one once it is
    // no listed name's beginning; never in none.
    if (bytes_left >= 2 || (bytes_left == 1 && l.trie == kNoNode)) return TextRoom{1, UINT32_MAX};
    return bytes_left == 0 ? std::optional(TextRoom{1, 0}) : std::nullopt;
  }
  const Node& n = nodes_[l.node];
  // After c code points: max(0, min_length - code_points - c) + 1 + outer <= bytes_left.
  const int64_t slack = int64_t{bytes_left} - 1 - l.outer;
  if (slack < 0) return TextRoom{1, 0};
  const int64_t fewest = std::max<int64_t>(1, int64_t{n.min_length} - l.code_points - slack);
  const uint32_t most = n.max_length - l.code_points;
  return TextRoom{static_cast<uint32_t>(std::min<int64_t>(fewest, UINT32_MAX)), most};
}

}  // namespace cact::chat
