#include "engine/lowering/index_simplify.h"

#include <algorithm>

namespace kiln::lowering {

namespace {

using IOp = IExprNode::Op;

// A division left as it is (ie_floordiv and ie_mod fold constants only).
IExpr make_floordiv_node(const IExpr& a, int64_t c) { return ie_floordiv(a, ie_const(c)); }
IExpr make_mod_node(const IExpr& a, int64_t c) { return ie_mod(a, ie_const(c)); }

int64_t sat_add(int64_t a, int64_t b) {
  if (a == INT64_MIN || b == INT64_MIN) return INT64_MIN;
  if (a == INT64_MAX || b == INT64_MAX) return INT64_MAX;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const bool neg = (a < 0) != (b < 0);
  if (a == INT64_MIN || a == INT64_MAX || b == INT64_MIN || b == INT64_MAX) return neg ? INT64_MIN : INT64_MAX;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return neg ? INT64_MIN : INT64_MAX;
  return r;
}

int64_t floor_div(int64_t a, int64_t c) {  // c > 0
  if (a == INT64_MIN || a == INT64_MAX) return a;
  int64_t q = a / c;
  return (a % c != 0 && a < 0) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t c) {  // c > 0
  int64_t r = a % c;
  return r < 0 ? r + c : r;
}

IndexRange scaled(IndexRange r, int64_t k) {
  int64_t a = sat_mul(r.lo, k), b = sat_mul(r.hi, k);
  return {std::min(a, b), std::max(a, b)};
}

bool positive_const(const IExpr& e) { return e->op == IOp::Const && e->value > 0; }

// a = sum(coef * atom) + constant; atoms are anything but a sum or a constant multiple.
struct Term {
  int64_t coef;
  IExpr atom;
};
struct Linear {
  std::vector<Term> terms;
  int64_t constant = 0;
  bool overflow = false;
};

void add_term(Linear& l, int64_t coef, const IExpr& atom) {
  for (auto& t : l.terms)
    if (ie_equal(t.atom, atom)) {
      if (__builtin_add_overflow(t.coef, coef, &t.coef)) l.overflow = true;
      return;
    }
  l.terms.push_back({coef, atom});
}

void linearize(const IExpr& e, int64_t scale, Linear& l) {
  int64_t s;
  switch (e->op) {
    case IOp::Const:
      if (__builtin_mul_overflow(scale, e->value, &s) || __builtin_add_overflow(l.constant, s, &l.constant))
        l.overflow = true;
      return;
    case IOp::Add:
      linearize(e->a, scale, l);
      linearize(e->b, scale, l);
      return;
    case IOp::Mul:
      if (e->a->op == IOp::Const || e->b->op == IOp::Const) {
        const IExpr& k = e->a->op == IOp::Const ? e->a : e->b;
        const IExpr& x = e->a->op == IOp::Const ? e->b : e->a;
        if (__builtin_mul_overflow(scale, k->value, &s)) l.overflow = true;
        else linearize(x, s, l);
        return;
      }
      add_term(l, scale, e);
      return;
    default: add_term(l, scale, e);
  }
}

Linear linear(const IExpr& e) {
  Linear l;
  linearize(e, 1, l);
  l.terms.erase(std::remove_if(l.terms.begin(), l.terms.end(), [](const Term& t) { return t.coef == 0; }), l.terms.end());
  return l;
}

IExpr build(const std::vector<Term>& terms, int64_t constant) {
  IExpr out = ie_const(0);
  for (const auto& t : terms) out = ie_add(out, ie_mul(t.atom, ie_const(t.coef)));
  return ie_add(out, ie_const(constant));
}

IndexRange range_of(const std::vector<Term>& terms, int64_t constant, const std::vector<int64_t>& ext) {
  IndexRange r{constant, constant};
  for (const auto& t : terms) {
    IndexRange a = scaled(ie_range(t.atom, ext), t.coef);
    r = {sat_add(r.lo, a.lo), sat_add(r.hi, a.hi)};
  }
  return r;
}

IExpr div_by(const IExpr& a, int64_t c, const std::vector<int64_t>& ext);
IExpr mod_by(const IExpr& a, int64_t c, const std::vector<int64_t>& ext);

// Splits the terms of l not divisible by c as f*big + small with f | c and 0 <= small < f, for the
// largest such f > 1: then (f*big + small) // c = big // (c/f) and (f*big + small) % c = f*(big % (c/f)) + small.
bool split_by_factor(const std::vector<Term>& rest, int64_t rest_const, int64_t c, const std::vector<int64_t>& ext,
                     int64_t* f_out, IExpr* big, IExpr* small) {
  std::vector<int64_t> candidates;
  for (const auto& t : rest) {
    const int64_t f = t.coef > 0 ? t.coef : 0;
    if (f > 1 && c % f == 0) candidates.push_back(f);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t f : candidates) {
    std::vector<Term> b, s;
    for (const auto& t : rest) (t.coef % f == 0 ? b : s).push_back(t);
    const int64_t big_const = floor_div(rest_const, f), small_const = floor_mod(rest_const, f);
    if (!range_of(s, small_const, ext).within(0, f - 1)) continue;
    for (auto& t : b) t.coef /= f;
    *f_out = f;
    *big = build(b, big_const);
    *small = build(s, small_const);
    return true;
  }
  return false;
}

IExpr div_by(const IExpr& a, int64_t c, const std::vector<int64_t>& ext) {
  Linear l = linear(a);
  if (l.overflow) return make_floordiv_node(a, c);
  std::vector<Term> whole, rest;
  for (const auto& t : l.terms) {
    if (t.coef % c == 0) whole.push_back({t.coef / c, t.atom});
    else rest.push_back(t);
  }
  const int64_t whole_const = floor_div(l.constant, c), rest_const = floor_mod(l.constant, c);
  IExpr out = build(whole, whole_const);
  if (range_of(rest, rest_const, ext).within(0, c - 1)) return out;  // the rest is below one step of c
  int64_t f;
  IExpr big, small;
  if (split_by_factor(rest, rest_const, c, ext, &f, &big, &small)) return ie_add(out, div_by(big, c / f, ext));
  return ie_add(out, make_floordiv_node(build(rest, rest_const), c));
}

IExpr mod_by(const IExpr& a, int64_t c, const std::vector<int64_t>& ext) {
  Linear l = linear(a);
  if (l.overflow) return make_mod_node(a, c);
  std::vector<Term> rest;
  for (const auto& t : l.terms)
    if (t.coef % c != 0) rest.push_back(t);
  const int64_t rest_const = floor_mod(l.constant, c);
  if (rest.empty()) return ie_const(rest_const);
  if (range_of(rest, rest_const, ext).within(0, c - 1)) return build(rest, rest_const);
  int64_t f;
  IExpr big, small;
  if (split_by_factor(rest, rest_const, c, ext, &f, &big, &small))
    return ie_add(ie_mul(mod_by(big, c / f, ext), ie_const(f)), small);
  return make_mod_node(build(rest, rest_const), c);
}

// y // b in the form div_by gives it: (x // a) // b is x // (a*b).
IExpr canonical_div(const IExpr& y, int64_t b) {
  if (y->op == IOp::FloorDiv && positive_const(y->b)) {
    int64_t ab;
    if (!__builtin_mul_overflow(y->b->value, b, &ab)) return canonical_div(y->a, ab);
  }
  return make_floordiv_node(y, b);
}

// k*b*(y // b) + k*(y % b) is k*y: the two halves of y put back together, repeatedly.
IExpr recombine(const IExpr& e) {
  Linear l = linear(e);
  if (l.overflow) return e;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t m = 0; m < l.terms.size() && !changed; ++m) {
      const IExpr& mod = l.terms[m].atom;
      if (mod->op != IOp::Mod || !positive_const(mod->b)) continue;
      const int64_t k = l.terms[m].coef, b = mod->b->value;
      int64_t kb;
      if (__builtin_mul_overflow(k, b, &kb)) continue;
      const IExpr quotient = canonical_div(mod->a, b);
      for (size_t d = 0; d < l.terms.size(); ++d) {
        if (d == m || l.terms[d].coef != kb || !ie_equal(l.terms[d].atom, quotient)) continue;
        const IExpr y = mod->a;
        l.terms.erase(l.terms.begin() + static_cast<long>(std::max(d, m)));
        l.terms.erase(l.terms.begin() + static_cast<long>(std::min(d, m)));
        Linear ly = linear(y);
        if (ly.overflow) return e;
        for (const auto& t : ly.terms) add_term(l, sat_mul(t.coef, k), t.atom);
        int64_t add;
        if (__builtin_mul_overflow(ly.constant, k, &add) || __builtin_add_overflow(l.constant, add, &l.constant))
          return e;
        l.terms.erase(std::remove_if(l.terms.begin(), l.terms.end(), [](const Term& t) { return t.coef == 0; }),
                      l.terms.end());
        changed = true;
        break;
      }
    }
  }
  return l.overflow ? e : build(l.terms, l.constant);
}

}  // namespace

bool ie_equal(const IExpr& a, const IExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->op != b->op) return false;
  switch (a->op) {
    case IOp::Const: return a->value == b->value;
    case IOp::Var: return a->var == b->var;
    case IOp::Size: return capture::sym_str(a->size) == capture::sym_str(b->size);
    default: return ie_equal(a->a, b->a) && ie_equal(a->b, b->b);
  }
}

IndexRange ie_range(const IExpr& e, const std::vector<int64_t>& ext) {
  switch (e->op) {
    case IOp::Const: return {e->value, e->value};
    case IOp::Var:
      if (e->var >= 0 && e->var < static_cast<int>(ext.size()) && ext[e->var] > 0) return {0, ext[e->var] - 1};
      return {};
    case IOp::Size: return {0, INT64_MAX};
    case IOp::Add: {
      IndexRange a = ie_range(e->a, ext), b = ie_range(e->b, ext);
      return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)};
    }
    case IOp::Mul: {
      IndexRange a = ie_range(e->a, ext), b = ie_range(e->b, ext);
      int64_t p[] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
      return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
    }
    case IOp::FloorDiv: {
      if (!positive_const(e->b)) return {};
      IndexRange a = ie_range(e->a, ext);
      return {floor_div(a.lo, e->b->value), floor_div(a.hi, e->b->value)};
    }
    case IOp::Mod: {
      if (!positive_const(e->b)) return {};
      IndexRange a = ie_range(e->a, ext);
      if (a.within(0, e->b->value - 1)) return a;
      return {0, e->b->value - 1};
    }
    case IOp::Min: {
      IndexRange a = ie_range(e->a, ext), b = ie_range(e->b, ext);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case IOp::Max: {
      IndexRange a = ie_range(e->a, ext), b = ie_range(e->b, ext);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return {};
}

IExpr ie_simplify(const IExpr& e, const std::vector<int64_t>& ext) {
  switch (e->op) {
    case IOp::Const:
    case IOp::Var:
    case IOp::Size: return e;
    case IOp::Add: return recombine(ie_add(ie_simplify(e->a, ext), ie_simplify(e->b, ext)));
    case IOp::Mul: return recombine(ie_mul(ie_simplify(e->a, ext), ie_simplify(e->b, ext)));
    case IOp::FloorDiv: {
      IExpr a = ie_simplify(e->a, ext), b = ie_simplify(e->b, ext);
      return positive_const(b) ? recombine(div_by(a, b->value, ext)) : ie_floordiv(a, b);
    }
    case IOp::Mod: {
      IExpr a = ie_simplify(e->a, ext), b = ie_simplify(e->b, ext);
      return positive_const(b) ? recombine(mod_by(a, b->value, ext)) : ie_mod(a, b);
    }
    case IOp::Min:
    case IOp::Max: {
      // One side never below (max) or above (min) the other over the loops' ranges: that side.
      IExpr a = ie_simplify(e->a, ext), b = ie_simplify(e->b, ext);
      const IndexRange ra = ie_range(a, ext), rb = ie_range(b, ext);
      const bool is_max = e->op == IOp::Max;
      if (is_max ? ra.lo >= rb.hi : ra.hi <= rb.lo) return a;
      if (is_max ? rb.lo >= ra.hi : rb.hi <= ra.lo) return b;
      return is_max ? ie_max(a, b) : ie_min(a, b);
    }
  }
  return e;
}

}  // namespace kiln::lowering
