#pragma once
// The JSON call list inside <tool_call>…</tool_call> as a byte-level
// incremental matcher (docs/TOOLS.md "Constrained decoding"), built from a
// ToolList and the tool choice:
//
//   [{"name":<name>,"arguments":{...}},...]   compact: no whitespace outside strings
//
// with at least one call, "name" first. The name: under auto any JSON string
// (listed or not is known when it closes: step() says `unlisted` and the
// matcher stops there), under required one of the listed names, under a named
// choice that name (names in their compact JSON form). The arguments follow
// the tool's Schema: only declared keys, each once, in any order, every
// required one before '}'; values of the declared type within their bounds.
// Integers and numbers have at most 15 digits (every such value is exact in a
// double, and two different ones never round to the same double), no exponent,
// and their bounds hold on every prefix: a digit is refused when no completion
// of what it leaves lies in range. enum/const values are written as the
// literal texts (those that pass validate_call).
//
// A State is a value: cheap to copy (the stack copies only its live frames).
// min_bytes_to_complete() is the length of the shortest text that closes the
// list from a state (under auto, until a name is open, of the shortest with a
// listed name; inside the name, closing it unlisted ends the list). From a
// state of cost c some byte always leads to one of cost c - 1 or less, so a
// budget that covers the cost is never a dead end.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cact/tools.h"

namespace cact::chat {

inline constexpr uint32_t kNoCompletion = UINT32_MAX;  // no text completes it

// a + b for costs: kNoCompletion when either is, or when the sum reaches it.
inline uint32_t add_cost(uint32_t a, uint32_t b) {
  const uint64_t sum = uint64_t{a} + b;
  return sum >= kNoCompletion ? kNoCompletion : static_cast<uint32_t>(sum);
}

class CallGrammar {
 public:
  // Frames: the list, the call, then one per open object/array of the
  // arguments; the arguments nest at most kMaxJsonDepth deep.
  static constexpr size_t kMaxFrames = kMaxJsonDepth + 2;

  // An open list, call, object or array.
  struct Frame {
    uint32_t node;   // object/array: schema node; call: tool, once its name closed
    uint32_t outer;  // fewest bytes that close everything around this frame once it closed
    uint64_t seen;   // object: the properties written so far
    uint32_t aux;    // object: key trie node or current property; array: items; list/call: bytes of a fixed text taken
    uint8_t kind;
    uint8_t phase;
  };
  // The value being written when it is a string, number or literal.
  struct Leaf {
    uint8_t kind = 0;
    uint8_t phase = 0;
    uint8_t pending = 0;                      // string: \u digits or UTF-8 continuation bytes still due
    uint8_t lo = 0, hi = 0;                   // string: the range of the next UTF-8 continuation byte
    uint8_t int_digits = 0, frac_digits = 0;  // number
    bool negative = false;                    // number
    uint16_t hex = 0;                         // string: \u value (the high surrogate while its low half is due)
    uint16_t low_hex = 0;                     // string: the low surrogate's \u value
    uint32_t node = 0;                        // string/number: schema node
    uint32_t trie = 0;                        // literal / auto name: trie node
    uint32_t code_points = 0;                 // string
    uint32_t outer = 0;
    uint64_t digits = 0;  // number: every digit so far as one integer
  };
  class State {
   public:
    State() = default;
    State(const State& other) { *this = other; }
    State& operator=(const State& other) {
      leaf = other.leaf;
      depth = other.depth;
      stopped = other.stopped;
      std::copy_n(other.frames.begin(), other.depth, frames.begin());
      return *this;
    }

   private:
    friend class CallGrammar;
    Leaf leaf;
    uint8_t depth = 0;
    bool stopped = false;                  // an unlisted name closed
    std::array<Frame, kMaxFrames> frames;  // [0, depth) are live
  };

  enum class Step : uint8_t { ok, refused, unlisted };

  // Throws cact::Error when the choice names a tool that is not listed, when no
  // listed tool can be called (required/named: every one has an argument no
  // value satisfies), or when an object declares more than 64 properties.
  CallGrammar(const ToolList& tools, const ToolChoice& choice);

  State start() const;
  Step step(State& s, uint8_t byte) const;
  bool closed(const State& s) const;  // the list's ']' was taken
  bool stopped(const State& s) const { return s.stopped; }
  // Fewest bytes that close the list from `s` (0 once closed or stopped);
  // kNoCompletion when nothing does.
  uint32_t min_bytes_to_complete(const State& s) const;

  // Inside the quotes of a name under auto (the bytes of the name as written).
  bool in_free_name(const State& s) const;

  // For masks: when the next byte goes into the text of a string (no escape or
  // UTF-8 sequence open), a piece of plain string text (no quote, backslash or
  // control byte; whole UTF-8) with c code points is accepted, and leaves a
  // state that closes within `bytes_left` bytes, exactly when c is in
  // [min_cp, max_cp]. nullopt: not such a state, step the pieces instead.
  struct TextRoom {
    uint32_t min_cp, max_cp;
  };
  std::optional<TextRoom> string_text_room(const State& s, uint32_t bytes_left) const;

  // The names, keys and enum values as written (with the fixed texts, digits
  // and printable ASCII, what a shortest completion may write): the caller
  // checks the vocabulary can write each byte on its own.
  const std::string& bytes_written() const { return bytes_written_; }

 private:
  __extension__ typedef __int128 Scaled;  // a number in units of 1e-15

  enum class NodeKind : uint8_t { string, number, literal, array, object };
  // One compiled schema node.
  struct Node {
    NodeKind kind = NodeKind::object;
    uint32_t min_bytes = kNoCompletion;                        // the shortest value
    uint32_t min_length = 0, max_length = UINT32_MAX;          // string: code points
    uint32_t number = 0;                                       // number: index into numbers_
    uint32_t trie = 0;                                         // literal: the values; object: the keys (JSON texts)
    uint32_t item = 0, min_items = 0, max_items = UINT32_MAX;  // array
    uint32_t first_property = 0, property_count = 0;           // object
    uint64_t required = 0, all = 0;                            // object: property bit sets
  };
  struct Property {
    uint32_t node;
    uint32_t entry_bytes;  // the shortest ,"key":value
  };
  struct NumberSpec {
    bool integer = false;
    Scaled lo = 0, hi = 0;  // every value written lies in [lo, hi], two values of the 15-digit grid
    uint32_t start_cost = kNoCompletion, minus_cost = kNoCompletion;  // shortest value from nothing / from "-"
  };
  struct TrieNode {
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
    int32_t terminal = -1;              // the literal, tool or property a complete text stands for
    uint32_t depth = 0;                 // bytes from the root
    uint32_t min_cost = kNoCompletion;  // fewest bytes to a terminal, plus what that terminal costs after
    uint64_t keys = 0;                  // key tries: the properties below (and at) this node
  };
  struct TrieEdge {
    uint8_t byte;
    uint32_t to;
  };

  uint32_t compile(const Schema& s, uint32_t depth);
  uint32_t add_trie(const std::vector<std::string>& texts, const std::vector<int32_t>& values,
                    const std::vector<uint32_t>& terminal_costs);
  uint32_t trie_child(uint32_t node, uint8_t byte) const;
  void compile_number(Node& n, const Schema& s);
  void compile_object(Node& n, const Schema& s, uint32_t depth);
  uint32_t literal_trie(const std::vector<std::string>& literals);

  // Stepping.
  Step step_leaf(State& s, uint8_t byte, bool& consumed) const;
  Step step_string(State& s, uint8_t byte) const;
  Step step_number(State& s, uint8_t byte, bool& consumed) const;
  Step step_frame(State& s, uint8_t byte) const;
  bool step_key(Frame& f, uint32_t from, uint8_t byte) const;
  bool take_code_point(Leaf& leaf) const;
  void name_bytes(Leaf& leaf, uint32_t code_point) const;
  void push_value(State& s, uint32_t node, uint32_t outer) const;
  void push_frame(State& s, uint8_t kind, uint32_t node, uint32_t outer) const;
  void child_closed(State& s, int32_t value) const;
  Step close_string(State& s) const;

  // Costs.
  uint32_t leaf_cost(const Leaf& leaf) const;
  uint32_t frame_cost(const Frame& f) const;
  uint32_t string_pending(const Leaf& leaf) const;
  static uint32_t number_cost(const NumberSpec& spec, const Leaf& leaf);
  static bool number_closes(const NumberSpec& spec, const Leaf& leaf);
  uint32_t required_after(const Node& n, uint64_t seen) const;
  uint32_t key_cost(const Node& n, uint64_t seen, uint32_t trie_node) const;
  uint32_t item_rest(const Node& n, uint32_t items) const;

  ToolChoiceMode mode_;
  std::vector<Node> nodes_;
  std::vector<Property> properties_;
  std::vector<NumberSpec> numbers_;
  std::vector<TrieNode> trie_;
  std::vector<TrieEdge> edges_;
  std::vector<uint32_t> tool_nodes_;   // per tool: its parameters' node
  std::vector<uint32_t> tool_rest_;    // per tool: bytes after its name: ,"arguments":{...}}
  uint32_t name_trie_ = 0;             // auto: the decoded names; required/named: the names as JSON texts
  uint32_t min_call_ = kNoCompletion;  // fewest bytes of one call
  uint32_t max_depth_ = 0;
  std::string bytes_written_;
};

}  // namespace cact::chat
