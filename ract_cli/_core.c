/* ract_cli._core: the native per-line core (SPEC §2, §11; issue 14).
 *
 * One line -> strict RFC 8259 parse into a flat C tree -> envelope (§2.2)
 * -> kind and payload checks from a compiled table (§2.5-2.6) -> canonical
 * bytes (§2.3, JCS with exact integers) -> SHA-256 -> compare.
 *
 * The contract with the pure-Python path: whatever this file is not sure of
 * answers None, and the Python path decides (and words the findings). A
 * non-None answer promises what the function's docstring says (no integrity
 * problem at all for the module-level functions; no problem of any kind for a
 * Verifier from compile_kinds). So every doubt here is a None, never a guess.
 *
 * Threads: the parse, envelope, payload checks, canonical form and hash of a
 * batch run with the GIL released. Numbers with a fraction or exponent are
 * converted without the GIL when the token has at most 15 significant digits
 * and a small exponent (exact, see fast_double); the rest go through
 * PyOS_string_to_double / PyOS_double_to_string, whose dtoa state is not
 * thread-safe, with the GIL held. Python objects are built with the GIL.
 *
 * Hostile input: every read is bounds-checked against the line length,
 * nesting is bounded by MAX_DEPTH with an explicit stack in the parser (the
 * serializer and the object builder recurse, but never deeper than the
 * parser allowed), every write to the canonical buffer is bounds-checked,
 * and every buffer is O(line length).
 *
 * Memory on a huge line (issue 15, item 8): the line is read where it is (a
 * bytes object or a read-only view of one, never copied); the canonical form
 * is hashed as it is written, through a buffer of STREAM_BYTES (never held
 * whole); a string value with escapes is decoded into the scratch buffer only
 * while that stays small (LAZY_STR, SCRATCH_CAP), else it is left in the line
 * (S_LAZY) and decoded again where it is written or built. What remains is
 * the line itself and the Python objects of the event.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <unistd.h>

/* SHA-256 through OpenSSL's SHA256_* functions where this OpenSSL still has them: on a ~500-byte line
 * they cost ~110 ns less than EVP_DigestInit/Update/Final (EVP's dispatch; the same block function
 * under both, SHA-NI where the CPU has it). -DRACT_SHA_EVP, or an OpenSSL without the deprecated API,
 * takes EVP (make fuzz-native's ThreadSanitizer build does, so both are tested). The suppression must
 * come before the first OpenSSL header. */
#ifndef RACT_SHA_EVP
#define OPENSSL_SUPPRESS_DEPRECATED
#endif
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#if !defined(RACT_SHA_EVP) && OPENSSL_VERSION_MAJOR < 4 && !defined(OPENSSL_NO_DEPRECATED_3_0)
#define RACT_SHA_LOW 1
#include <openssl/sha.h>
#endif

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 512 /* the line's object is level 1 (read.line.MAX_NESTING) */
#define NONE UINT32_MAX
#define CHUNK_LINES 64
#define CHUNK_BYTES (1u << 20)
#define TRIM_BYTES (4u << 20) /* a workspace buffer bigger than this is freed after its chunk */
#define POOL_SIZE 6 /* check_block with a helper holds 1 + SHARE_SLOTS */
/* (overridable at build time, e.g. -DLAZY_STR=8, so that a fuzzing build takes these paths often) */
#ifndef STREAM_BYTES
#define STREAM_BYTES (64u << 10) /* the canonical form is fed to SHA-256 this much at a time */
#endif
#ifndef LAZY_STR
#define LAZY_STR 4096 /* a string value decoding to more bytes than this is S_LAZY */
#endif
#ifndef SCRATCH_CAP
#define SCRATCH_CAP (1u << 20) /* ... and so is one of more than LAZY_MIN past this much scratch */
#endif
#define LAZY_MIN 64 /* (never an id, a hash, a kind or an enum value) */

enum { T_NULL, T_FALSE, T_TRUE, T_INT, T_DBL, T_STR, T_ARR, T_OBJ };

/* string flags */
#define S_ESC 1     /* bytes live in the scratch buffer (the token had escapes) */
#define S_ASCII 2   /* every decoded byte < 0x80 */
#define S_SPECIAL 4 /* decoded bytes hold '"', '\\' or < 0x20: JCS must escape */
#define S_LAZY 8    /* a value with escapes left undecoded: u.s.off is its token's first byte after the
                       quote, u.s.len its decoded length; only emit and build read it (lazy_*) */

typedef struct {
    uint8_t type, flags;
    uint32_t next; /* next sibling in the parent's chain; members are key, value, key, value... */
    union {
        struct {
            uint32_t off, len;
        } s;
        struct {
            int64_t i;
            uint32_t off; /* the token in the line; its length is in flags */
        } n;
        uint32_t slot; /* T_DBL: index into Line.dbls */
        struct {
            uint32_t first, count, perm; /* count: members (objects) or items; perm: Line.perm offset */
        } c;
    } u;
} Node;

typedef struct {
    double v;
    uint32_t off, len; /* the token in the line */
    uint32_t tlen;     /* canonical text length */
    uint8_t done;      /* v and txt are set */
    char txt[32];      /* ECMAScript Number::toString form, at most 25 chars */
} Dbl;

/* ST_HASH_BAD: valid in every way but its stored hash, which differs from the canonical one (in
 * computed); the payload needed no Python validator. Treated as ST_BAD everywhere but where a long
 * line's compact result is asked for (run_lines' compact_from). */
enum { ST_BAD, ST_NEED_DBL, ST_READY, ST_OK, ST_NOMEM, ST_INTERNAL, ST_HASH_BAD };

enum { K_ID, K_RUN_ID, K_STEP_ID, K_PARENT_ID, K_TS, K_KIND, K_PAYLOAD, K_PREV, K_HASH, K_COUNT };

struct KindEntry;

typedef struct {
    const uint8_t *src;
    size_t len;
    Node *nodes;
    size_t nn, ncap;
    uint8_t *scratch;
    size_t sn, scap;
    uint32_t *perm;
    size_t pn, pcap;
    uint32_t *tmp;
    size_t tcap;
    Dbl *dbls;
    size_t dn, dcap;
    uint8_t *out;
    size_t on, ocap;
    struct Sha *sink; /* set: put() feeds a full buffer to this digest (streamed hashing) */
    int status;
    int need_py;                  /* the payload needs the kind's Python validator */
    int envelope;                 /* a line check: the root's keys are check_envelope's to judge */
    const struct KindEntry *kind; /* Verifier mode: the kind's entry */
    uint32_t key[K_COUNT], val[K_COUNT]; /* envelope member nodes */
    uint8_t computed[64];                /* ST_HASH_BAD: the canonical hash, hex */
    uint64_t id_hi, id_lo;               /* ST_OK: the id's 128 bits and id_hash of them, worked out */
    uint32_t id_h;                       /* while staging (in parallel), not while taking */
} Line;

/* One SHA-256 in progress (see RACT_SHA_LOW). */
#ifdef RACT_SHA_LOW
typedef struct Sha {
    SHA256_CTX c;
} Sha;
static inline int sha_open(Sha *h) { return h != NULL; }
static inline void sha_close(Sha *h) { (void)h; }
static inline int sha_init(Sha *h) { return SHA256_Init(&h->c); }
static inline int sha_update(Sha *h, const void *p, size_t n) { return SHA256_Update(&h->c, p, n); }
static inline int sha_final(Sha *h, uint8_t md[32]) { return SHA256_Final(md, &h->c); }
#else
static const EVP_MD *g_md; /* fetched once; safe to share between threads */
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
static EVP_MD *g_md_fetched;
#endif
typedef struct Sha {
    EVP_MD_CTX *c;
} Sha;
static inline int sha_open(Sha *h) { return (h->c = EVP_MD_CTX_new()) != NULL; }
static inline void sha_close(Sha *h)
{
    EVP_MD_CTX_free(h->c);
    h->c = NULL;
}
static inline int sha_init(Sha *h) { return EVP_DigestInit_ex(h->c, g_md, NULL); }
static inline int sha_update(Sha *h, const void *p, size_t n) { return EVP_DigestUpdate(h->c, p, n); }
static inline int sha_final(Sha *h, uint8_t md[32])
{
    unsigned int n = 0;
    return EVP_DigestFinal_ex(h->c, md, &n) && n == 32;
}
#endif

typedef struct {
    Line lines[CHUNK_LINES];
    Sha sha;
} Workspace;
static Workspace *g_pool[POOL_SIZE]; /* touched only with the GIL held */
static int g_npool;

/* --- buffers -------------------------------------------------------------- */

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return -1;
        ncap *= 2;
    }
    void *p = realloc(*buf, ncap * elem);
    if (!p)
        return -1;
    *buf = p;
    *cap = ncap;
    return 0;
}

#define GROW(L, field, capf, need)                                                                                     \
    ((need) <= (L)->capf ? 0 : grow((void **)&(L)->field, &(L)->capf, (need), sizeof(*(L)->field)))

static void line_free(Line *L)
{
    free(L->nodes);
    free(L->scratch);
    free(L->perm);
    free(L->tmp);
    free(L->dbls);
    free(L->out);
    memset(L, 0, sizeof(*L));
}

/* Keep memory O(the lines in hand): a buffer grown by one huge line is given back. */
static void line_trim(Line *L)
{
    if (L->ncap * sizeof(Node) > TRIM_BYTES || L->scap > TRIM_BYTES || L->pcap * 4 > TRIM_BYTES ||
        L->tcap * 4 > TRIM_BYTES || L->dcap * sizeof(Dbl) > TRIM_BYTES || L->ocap > TRIM_BYTES)
        line_free(L);
}

static Workspace *ws_get(void)
{
    if (g_npool > 0)
        return g_pool[--g_npool];
    Workspace *ws = calloc(1, sizeof(Workspace));
    if (!ws)
        return NULL;
    if (!sha_open(&ws->sha)) {
        free(ws);
        return NULL;
    }
    return ws;
}

static void ws_put(Workspace *ws)
{
    for (int i = 0; i < CHUNK_LINES; i++) {
        ws->lines[i].src = NULL;
        ws->lines[i].kind = NULL;
        line_trim(&ws->lines[i]);
    }
    if (g_npool < POOL_SIZE) {
        g_pool[g_npool++] = ws;
        return;
    }
    for (int i = 0; i < CHUNK_LINES; i++)
        line_free(&ws->lines[i]);
    sha_close(&ws->sha);
    free(ws);
}

/* --- parsing -------------------------------------------------------------- */

static inline size_t skip_ws(const uint8_t *s, size_t len, size_t p)
{
    if (p < len && s[p] > ' ') /* compact layouts: no whitespace at all */
        return p;
    while (p < len && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r'))
        p++;
    return p;
}

static inline int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Length of the valid UTF-8 sequence at p (2..4), or 0: overlongs, UTF-8-encoded
 * surrogates, code points past U+10FFFF and truncated sequences are invalid. */
static inline size_t utf8_seq(const uint8_t *p, size_t rem)
{
    uint8_t c = p[0];
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        return (rem >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c < 0xF0) {
        if (rem < 3)
            return 0;
        uint8_t c1 = p[1];
        if (c == 0xE0) {
            if (c1 < 0xA0 || c1 > 0xBF)
                return 0;
        } else if (c == 0xED) {
            if (c1 < 0x80 || c1 > 0x9F)
                return 0;
        } else if ((c1 & 0xC0) != 0x80)
            return 0;
        return (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c < 0xF5) {
        if (rem < 4)
            return 0;
        uint8_t c1 = p[1];
        if (c == 0xF0) {
            if (c1 < 0x90 || c1 > 0xBF)
                return 0;
        } else if (c == 0xF4) {
            if (c1 < 0x80 || c1 > 0x8F)
                return 0;
        } else if ((c1 & 0xC0) != 0x80)
            return 0;
        return ((p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) ? 4 : 0;
    }
    return 0;
}

/* Whether 8 bytes may hold '"', '\\', a byte < 0x20 or >= 0x80 (exact "no"; a
 * "yes" only sends those bytes to the byte loop). */
static inline int special8(uint64_t v)
{
    const uint64_t lo = 0x0101010101010101ULL, hi = 0x8080808080808080ULL;
    uint64_t q = v ^ (lo * '"'), b = v ^ (lo * '\\');
    uint64_t t = ((q - lo) & ~q) | ((b - lo) & ~b) | ((v - lo * 0x20) & ~v) | v;
    return (t & hi) != 0;
}

/* The first position from p on that holds '"', '\\', a byte below 0x20 or (non_ascii) one from 0x80 on, or len.
 * With non_ascii: where a string token's plain run ends (plain_run); without: the next byte JCS escapes in a
 * decoded string, whose UTF-8 it writes as it is (escape_run). Both callers pass a constant: each is compiled
 * on its own. */
static inline size_t scan_run(const uint8_t *s, size_t len, size_t p, int non_ascii)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20), c1f = _mm_set1_epi8(0x1F);
    while (len >= 16 && p <= len - 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + p));
        /* signed, bytes >= 0x80 are negative and so "< 0x20" too; unsigned v <= 0x1F: v is its minimum with 0x1F */
        __m128i low = non_ascii ? _mm_cmplt_epi8(v, space) : _mm_cmpeq_epi8(_mm_min_epu8(v, c1f), v);
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), low);
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask)
            return p + (size_t)__builtin_ctz(mask);
        p += 16;
    }
#endif
    while (non_ascii && len >= 8 && p <= len - 8) {
        uint64_t v;
        memcpy(&v, s + p, 8);
        if (special8(v))
            break;
        p += 8;
    }
    while (p < len) {
        uint8_t c = s[p];
        if (c == '"' || c == '\\' || c < 0x20 || (non_ascii && c >= 0x80))
            return p;
        p++;
    }
    return p;
}

static inline size_t plain_run(const uint8_t *s, size_t len, size_t p) { return scan_run(s, len, p, 1); }
static inline size_t escape_run(const uint8_t *s, size_t len, size_t p) { return scan_run(s, len, p, 0); }

/* The end of the run of valid multi-byte UTF-8 sequences at p (s[p] >= 0x80), or 0 when one is invalid. A
 * run is taken at once: CJK or emoji text is one such run per word, not a plain_run call per character. */
static inline size_t utf8_run(const uint8_t *s, size_t len, size_t p)
{
    do {
        size_t k = utf8_seq(s + p, len - p);
        if (!k)
            return 0;
        p += k;
    } while (p < len && s[p] >= 0x80);
    return p;
}

static inline int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static inline int hex4(const uint8_t *s, size_t len, size_t p)
{
    if (len < 4 || p > len - 4)
        return -1;
    int v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[p + k]);
        if (h < 0)
            return -1;
        v = (v << 4) | h;
    }
    return v;
}

static inline const uint8_t *str_ptr(const Line *L, const Node *n)
{
    return (n->flags & S_ESC) ? L->scratch + n->u.s.off : L->src + n->u.s.off;
}

/* The escape at s[*pp] == '\\': its decoded UTF-8 bytes into out[0..3], their count returned (0:
 * invalid), *pp past it; *special / *ascii updated. */
static inline size_t decode_escape(const uint8_t *s, size_t len, size_t *pp, uint8_t out[4], int *special, int *ascii)
{
    size_t p = *pp;
    if (p + 1 >= len)
        return 0;
    uint8_t e = s[p + 1];
    p += 2;
    switch (e) {
    case '"':
    case '\\':
        out[0] = e;
        *special = 1;
        break;
    case '/':
        out[0] = '/';
        break;
    case 'b':
        out[0] = '\b';
        *special = 1;
        break;
    case 'f':
        out[0] = '\f';
        *special = 1;
        break;
    case 'n':
        out[0] = '\n';
        *special = 1;
        break;
    case 'r':
        out[0] = '\r';
        *special = 1;
        break;
    case 't':
        out[0] = '\t';
        *special = 1;
        break;
    case 'u': {
        int cp = hex4(s, len, p);
        if (cp < 0)
            return 0;
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (len < 6 || p > len - 6 || s[p] != '\\' || s[p + 1] != 'u')
                return 0; /* lone high surrogate */
            int lo = hex4(s, len, p + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF)
            return 0; /* lone low surrogate */
        *pp = p;
        if (cp < 0x80) {
            out[0] = (uint8_t)cp;
            if (cp < 0x20 || cp == '"' || cp == '\\')
                *special = 1;
            return 1;
        }
        *ascii = 0;
        if (cp < 0x800) {
            out[0] = (uint8_t)(0xC0 | (cp >> 6));
            out[1] = (uint8_t)(0x80 | (cp & 0x3F));
            return 2;
        }
        if (cp < 0x10000) {
            out[0] = (uint8_t)(0xE0 | (cp >> 12));
            out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            out[2] = (uint8_t)(0x80 | (cp & 0x3F));
            return 3;
        }
        out[0] = (uint8_t)(0xF0 | (cp >> 18));
        out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (uint8_t)(0x80 | (cp & 0x3F));
        return 4;
    }
    default:
        return 0;
    }
    *pp = p;
    return 1;
}

/* *pp is at the opening quote. 1 ok, 0 invalid. Never writes more decoded bytes
 * to scratch than the token has, so scratch of the line's length suffices. A value
 * (is_key 0) with escapes whose decoded bytes would pass LAZY_STR, or take the
 * scratch buffer past SCRATCH_CAP, is validated without being written (S_LAZY). */
static __attribute__((noinline)) int parse_str_slow(Line *L, size_t *pp, Node *n, int is_key)
{
    const uint8_t *s = L->src;
    size_t len = L->len, p = *pp + 1, start = p;
    int ascii = 1, special = 0;
    for (;;) {
        p = plain_run(s, len, p);
        if (p >= len)
            return 0;
        uint8_t c = s[p];
        if (c == '"') {
            n->flags = ascii ? S_ASCII : 0;
            n->u.s.off = (uint32_t)start;
            n->u.s.len = (uint32_t)(p - start);
            *pp = p + 1;
            return 1;
        }
        if (c == '\\')
            break;
        if (c < 0x20)
            return 0;
        if (c < 0x80) {
            p++;
            continue;
        }
        if (!(p = utf8_run(s, len, p)))
            return 0;
        ascii = 0;
    }
    /* escapes: decode into scratch (or, lazy, only count the decoded bytes) */
    size_t off = L->sn, dlen = p - start;
    uint8_t *d = L->scratch + off;
#define GOES_LAZY(total) (!is_key && ((total) > LAZY_STR || ((total) > LAZY_MIN && off + (total) > SCRATCH_CAP)))
    int lazy = GOES_LAZY(dlen);
    if (!lazy)
        memcpy(d, s + start, dlen);
    for (;;) {
        size_t q = plain_run(s, len, p), k;
        if (q > p) {
            if (!lazy && GOES_LAZY(dlen + (q - p)))
                lazy = 1;
            if (!lazy)
                memcpy(d + dlen, s + p, q - p);
            dlen += q - p;
            p = q;
        }
        if (p >= len)
            return 0;
        uint8_t c = s[p], buf[4];
        const uint8_t *from = buf; /* the bytes to append: an escape's, decoded, or a UTF-8 run's own */
        if (c == '"')
            break;
        if (c == '\\') {
            if (!(k = decode_escape(s, len, &p, buf, &special, &ascii)))
                return 0;
        } else if (c < 0x20) {
            return 0;
        } else { /* >= 0x80 (plain_run stops at nothing else): the run is copied as it is */
            if (!(q = utf8_run(s, len, p)))
                return 0;
            ascii = 0;
            from = s + p;
            k = q - p;
            p = q;
        }
        if (!lazy && GOES_LAZY(dlen + k))
            lazy = 1;
        if (!lazy)
            memcpy(d + dlen, from, k);
        dlen += k;
    }
#undef GOES_LAZY
    if (dlen >= (size_t)UINT32_MAX)
        return 0; /* cannot happen: the line is shorter than INT32_MAX */
    n->u.s.len = (uint32_t)dlen;
    *pp = p + 1;
    if (lazy) {
        n->flags = S_LAZY | (ascii ? S_ASCII : 0) | (special ? S_SPECIAL : 0);
        n->u.s.off = (uint32_t)start;
        return 1;
    }
    n->flags = S_ESC | (ascii ? S_ASCII : 0) | (special ? S_SPECIAL : 0);
    n->u.s.off = (uint32_t)off;
    L->sn = off + dlen;
    return 1;
}

/* The common case inline: an ASCII string without escapes. */
static inline int parse_str(Line *L, size_t *pp, Node *n, int is_key)
{
    size_t start = *pp + 1, p = plain_run(L->src, L->len, start);
    if (p < L->len && L->src[p] == '"') {
        n->flags = S_ASCII;
        n->u.s.off = (uint32_t)start;
        n->u.s.len = (uint32_t)(p - start);
        *pp = p + 1;
        return 1;
    }
    return parse_str_slow(L, pp, n, is_key);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Whether 8 bytes are all ASCII digits, and their value (SWAR, little-endian). */
static inline int eight_digits(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return ((v & 0xF0F0F0F0F0F0F0F0ULL) | (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ==
           0x3333333333333333ULL;
}

static inline uint32_t parse8(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    v = ((v & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;
    v = ((v & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
    return (uint32_t)(((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32);
}
#endif

/* *pp is at '-' or a digit. 1 ok, 0 invalid, -1 out of memory. */
static int parse_num(Line *L, size_t *pp, uint32_t ni)
{
    const uint8_t *s = L->src;
    size_t len = L->len, p = *pp, st = p;
    int neg = 0, dbl = 0;
    if (s[p] == '-') {
        neg = 1;
        p++;
    }
    if (p >= len)
        return 0;
    uint64_t m = 0; /* the first 19 digits: they fit in uint64 */
    if (s[p] == '0')
        p++;
    else if (s[p] >= '1' && s[p] <= '9') {
        size_t first = p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (len >= 8 && p <= len - 8 && p - first <= 11 && eight_digits(s + p)) {
            m = m * 100000000u + parse8(s + p);
            p += 8;
        }
#endif
        while (p < len && is_digit(s[p])) {
            if (p - first < 19)
                m = m * 10 + (uint64_t)(s[p] - '0');
            p++;
        }
    } else
        return 0;
    size_t int_end = p;
    if (p < len && s[p] == '.') {
        p++;
        if (p >= len || !is_digit(s[p]))
            return 0;
        while (p < len && is_digit(s[p]))
            p++;
        dbl = 1;
    }
    if (p < len && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        if (p < len && (s[p] == '+' || s[p] == '-'))
            p++;
        if (p >= len || !is_digit(s[p]))
            return 0;
        while (p < len && is_digit(s[p]))
            p++;
        dbl = 1;
    }
    Node *n = &L->nodes[ni];
    if (dbl) {
        /* converted later, with the GIL (dtoa's state is not thread-safe) */
        if (GROW(L, dbls, dcap, L->dn + 1) < 0)
            return -1;
        Dbl *d = &L->dbls[L->dn];
        d->off = (uint32_t)st;
        d->len = (uint32_t)(p - st);
        d->done = 0;
        n->type = T_DBL;
        n->u.slot = (uint32_t)L->dn++;
    } else {
        size_t digits = int_end - st - (size_t)neg;
        if (digits > 19)
            return 0; /* outside int64 (SPEC §2.1) */
        if (neg) {
            if (m > (uint64_t)INT64_MAX + 1)
                return 0;
            n->u.n.i = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
        } else {
            if (m > (uint64_t)INT64_MAX)
                return 0;
            n->u.n.i = (int64_t)m;
        }
        n->type = T_INT;
        n->flags = (uint8_t)(int_end - st); /* at most 20 */
        n->u.n.off = (uint32_t)st;
    }
    *pp = p;
    return 1;
}

/* RFC 8785 §3.2.3: keys ordered by UTF-16 code units. UTF-8 byte order equals
 * code point order, which differs from UTF-16 order only between U+E000..U+FFFF
 * (leads 0xEE, 0xEF) and astral characters (leads 0xF0..0xF4). At the first
 * differing byte either both strings are at the same character boundary, so the
 * lead bytes there decide, or both are inside characters with the same lead
 * byte, where code point order is UTF-16 order. Inputs are valid UTF-8. */
static inline int utf16_cmp(const uint8_t *pa, size_t la, const uint8_t *pb, size_t lb)
{
    size_t m = la < lb ? la : lb;
    for (size_t i = 0; i < m; i++) {
        uint8_t x = pa[i], y = pb[i];
        if (x != y) {
            if (x >= 0xEE && x <= 0xEF && y >= 0xF0)
                return 1;
            if (y >= 0xEE && y <= 0xEF && x >= 0xF0)
                return -1;
            return x < y ? -1 : 1;
        }
    }
    return la < lb ? -1 : la > lb;
}

static inline int key_cmp(const Line *L, uint32_t a, uint32_t b)
{
    const Node *na = &L->nodes[a], *nb = &L->nodes[b];
    size_t la = na->u.s.len, lb = nb->u.s.len;
    if (na->flags & nb->flags & S_ASCII) { /* byte order is UTF-16 order */
        const uint8_t *pa = str_ptr(L, na), *pb = str_ptr(L, nb);
        size_t m = la < lb ? la : lb;
        for (size_t i = 0; i < m; i++)
            if (pa[i] != pb[i])
                return pa[i] < pb[i] ? -1 : 1;
        return la < lb ? -1 : la > lb;
    }
    return utf16_cmp(str_ptr(L, na), la, str_ptr(L, nb), lb);
}

static inline int key_eq(const Line *L, uint32_t a, uint32_t b)
{
    const Node *na = &L->nodes[a], *nb = &L->nodes[b];
    return na->u.s.len == nb->u.s.len && memcmp(str_ptr(L, na), str_ptr(L, nb), na->u.s.len) == 0;
}

/* Sort an object's keys (O(n log n): a hostile line may hold a million keys). */
/* 1 sorted, 0 a key is there twice (DUPLICATE_KEY), -1 out of memory. */
static int sort_keys(Line *L, uint32_t *a, size_t n)
{
    if (n <= 16) {
        /* Insertion sort. Two equal keys always meet: when the later one is inserted it
         * stops at the first key not greater than itself, which is then equal to it. */
        for (size_t i = 1; i < n; i++) {
            uint32_t k = a[i];
            size_t j = i;
            int c = 1;
            while (j > 0 && (c = key_cmp(L, a[j - 1], k)) > 0) {
                a[j] = a[j - 1];
                j--;
            }
            if (c == 0)
                return 0;
            a[j] = k;
        }
        return 1;
    }
    if (GROW(L, tmp, tcap, n) < 0)
        return -1;
    uint32_t *src = a, *dst = L->tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = key_cmp(L, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(uint32_t));
    for (size_t i = 1; i < n; i++)
        if (key_eq(L, a[i - 1], a[i]))
            return 0;
    return 1;
}

/* At an object's '}': its keys in canonical order, and the duplicate-key rule. */
static int finish_object(Line *L, uint32_t oi)
{
    size_t count = L->nodes[oi].u.c.count;
    if (oi == 0 && L->envelope)
        return 1; /* the root: check_envelope accepts exactly the nine keys, once each, and
                     emit_envelope writes them in their canonical order */
    if (GROW(L, perm, pcap, L->pn + count) < 0)
        return -1;
    uint32_t *a = L->perm + L->pn;
    uint32_t k = L->nodes[oi].u.c.first;
    for (size_t i = 0; i < count; i++) {
        a[i] = k;
        k = L->nodes[L->nodes[k].next].next; /* key -> value -> next key */
    }
    int r = sort_keys(L, a, count);
    if (r <= 0)
        return r; /* out of memory, or DUPLICATE_KEY */
    L->nodes[oi].u.c.perm = (uint32_t)L->pn;
    L->pn += count;
    return 1;
}

typedef struct {
    uint32_t node, last;
} Frame;

/* Append a node and link it as the last child of the open container. */
static inline uint32_t attach(Line *L, const Frame *top, uint8_t type, int is_key)
{
    if (GROW(L, nodes, ncap, L->nn + 1) < 0)
        return NONE;
    uint32_t ni = (uint32_t)L->nn++;
    Node *n = &L->nodes[ni];
    n->type = type;
    n->flags = 0;
    n->next = NONE;
    if (top) {
        Node *parent = &L->nodes[top->node];
        if (top->last == NONE)
            parent->u.c.first = ni;
        else
            L->nodes[top->last].next = ni;
        if (is_key || parent->type == T_ARR)
            parent->u.c.count++;
    }
    return ni;
}

/* The whole line as exactly one JSON value (RFC 8259, SPEC §2.1). 1 ok, 0 invalid, -1 no memory. */
static int parse(Line *L)
{
    const uint8_t *s = L->src;
    size_t len = L->len, p;
    Frame st[MAX_DEPTH];
    int sp = 0, r;
    uint32_t ni;
    L->nn = L->sn = L->pn = L->dn = L->on = 0;
    L->need_py = 0;
    L->kind = NULL;
    if (len >= (size_t)INT32_MAX)
        return 0; /* offsets are 32-bit; the Python path judges such a line */
    if (GROW(L, scratch, scap, len + 1) < 0 || GROW(L, nodes, ncap, (len < (1u << 19) ? len : (1u << 19)) / 8 + 16) < 0)
        return -1;
    p = skip_ws(s, len, 0);
value:
    if (p >= len)
        return 0;
    switch (s[p]) {
    case '{':
    case '[': {
        uint8_t open = s[p];
        if (sp == MAX_DEPTH)
            return 0; /* nested deeper than MAX_NESTING */
        ni = attach(L, sp ? &st[sp - 1] : NULL, open == '{' ? T_OBJ : T_ARR, 0);
        if (ni == NONE)
            return -1;
        if (sp)
            st[sp - 1].last = ni;
        L->nodes[ni].u.c.first = NONE;
        L->nodes[ni].u.c.count = 0;
        L->nodes[ni].u.c.perm = 0;
        st[sp].node = ni;
        st[sp].last = NONE;
        sp++;
        p = skip_ws(s, len, p + 1);
        if (p < len && s[p] == (open == '{' ? '}' : ']')) {
            p++;
            sp--;
            if (open == '{' && (r = finish_object(L, ni)) <= 0)
                return r;
            goto after;
        }
        if (open == '{')
            goto key;
        goto value;
    }
    case '"':
        ni = attach(L, sp ? &st[sp - 1] : NULL, T_STR, 0);
        if (ni == NONE)
            return -1;
        if (sp)
            st[sp - 1].last = ni;
        if (!parse_str(L, &p, &L->nodes[ni], 0))
            return 0;
        goto after;
    case 't':
    case 'f':
    case 'n': {
        const char *word = s[p] == 't' ? "true" : s[p] == 'f' ? "false" : "null";
        size_t wl = strlen(word);
        if (len - p < wl || memcmp(s + p, word, wl) != 0)
            return 0;
        ni = attach(L, sp ? &st[sp - 1] : NULL, s[p] == 't' ? T_TRUE : s[p] == 'f' ? T_FALSE : T_NULL, 0);
        if (ni == NONE)
            return -1;
        if (sp)
            st[sp - 1].last = ni;
        p += wl;
        goto after;
    }
    default:
        if (s[p] != '-' && !is_digit(s[p]))
            return 0;
        ni = attach(L, sp ? &st[sp - 1] : NULL, T_INT, 0);
        if (ni == NONE)
            return -1;
        if (sp)
            st[sp - 1].last = ni;
        if ((r = parse_num(L, &p, ni)) <= 0)
            return r;
        goto after;
    }
key:
    if (p >= len || s[p] != '"')
        return 0;
    ni = attach(L, &st[sp - 1], T_STR, 1);
    if (ni == NONE)
        return -1;
    st[sp - 1].last = ni;
    if (!parse_str(L, &p, &L->nodes[ni], 1))
        return 0;
    p = skip_ws(s, len, p);
    if (p >= len || s[p] != ':')
        return 0;
    p = skip_ws(s, len, p + 1);
    goto value;
after:
    p = skip_ws(s, len, p);
    if (sp == 0)
        return p == len;
    if (p >= len)
        return 0;
    {
        uint32_t top = st[sp - 1].node;
        int is_obj = L->nodes[top].type == T_OBJ;
        if (s[p] == ',') {
            p = skip_ws(s, len, p + 1);
            if (is_obj)
                goto key;
            goto value;
        }
        if (s[p] == (is_obj ? '}' : ']')) {
            p++;
            sp--;
            if (is_obj && (r = finish_object(L, top)) <= 0)
                return r;
            goto after;
        }
    }
    return 0;
}

/* --- envelope (SPEC §2.2) ------------------------------------------------- */

static const char *const ENVELOPE[K_COUNT] = {"id",   "run_id",  "step_id",   "parent_id", "timestamp_ns",
                                              "kind", "payload", "prev_hash", "hash"};
static PyObject *g_env_keys[K_COUNT]; /* interned */

/* The envelope slot of a root key, or -1. ENVELOPE's names as literals: memcmp of a literal of known
 * length is a few loads, of ENVELOPE[slot] a call to libc (measured: 100 instructions a line more). */
static int key_slot(const uint8_t *k, size_t n)
{
    switch (n) {
    case 2:
        return memcmp(k, "id", 2) == 0 ? K_ID : -1;
    case 4:
        return memcmp(k, "kind", 4) == 0 ? K_KIND : memcmp(k, "hash", 4) == 0 ? K_HASH : -1;
    case 6:
        return memcmp(k, "run_id", 6) == 0 ? K_RUN_ID : -1;
    case 7:
        return memcmp(k, "step_id", 7) == 0 ? K_STEP_ID : memcmp(k, "payload", 7) == 0 ? K_PAYLOAD : -1;
    case 9:
        return memcmp(k, "parent_id", 9) == 0 ? K_PARENT_ID : memcmp(k, "prev_hash", 9) == 0 ? K_PREV : -1;
    case 12:
        return memcmp(k, "timestamp_ns", 12) == 0 ? K_TS : -1;
    default:
        return -1;
    }
}

static const uint8_t HEXCHAR[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
};

/* Whether n bytes are all lowercase hex digits. */
static inline int all_hex(const uint8_t *p, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128i lo0 = _mm_set1_epi8('0' - 1), hi9 = _mm_set1_epi8('9' + 1);
    const __m128i loa = _mm_set1_epi8('a' - 1), hif = _mm_set1_epi8('f' + 1);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i dig = _mm_and_si128(_mm_cmpgt_epi8(v, lo0), _mm_cmplt_epi8(v, hi9));
        __m128i af = _mm_and_si128(_mm_cmpgt_epi8(v, loa), _mm_cmplt_epi8(v, hif));
        if (_mm_movemask_epi8(_mm_or_si128(dig, af)) != 0xFFFF)
            return 0;
    }
#endif
    unsigned ok = 1;
    for (; i < n; i++)
        ok &= HEXCHAR[p[i]];
    return (int)ok;
}

static inline int is_hex(const Line *L, const Node *n, size_t want)
{
    return n->type == T_STR && !(n->flags & S_LAZY) && n->u.s.len == want && all_hex(str_ptr(L, n), want);
}

static int check_envelope(Line *L)
{
    const Node *root = &L->nodes[0];
    if (root->type != T_OBJ || root->u.c.count != K_COUNT)
        return 0;
    uint32_t *val = L->val, *keys = L->key;
    for (int i = 0; i < K_COUNT; i++)
        val[i] = NONE;
    uint32_t k = root->u.c.first;
    for (int i = 0; i < K_COUNT; i++) {
        const Node *kn = &L->nodes[k];
        int slot = key_slot(str_ptr(L, kn), kn->u.s.len);
        if (slot < 0 || val[slot] != NONE)
            return 0;
        keys[slot] = k;
        val[slot] = kn->next;
        k = L->nodes[kn->next].next;
    }
    const Node *v;
    if (!is_hex(L, &L->nodes[val[K_ID]], 32) || !is_hex(L, &L->nodes[val[K_RUN_ID]], 32))
        return 0;
    v = &L->nodes[val[K_STEP_ID]];
    if (v->type != T_NULL && !is_hex(L, v, 32))
        return 0;
    v = &L->nodes[val[K_PARENT_ID]];
    if (v->type != T_NULL && !is_hex(L, v, 32))
        return 0;
    v = &L->nodes[val[K_TS]];
    if (v->type != T_INT || v->u.n.i < 0) /* < 2^63 holds for every int64 */
        return 0;
    if (L->nodes[val[K_KIND]].type != T_STR || L->nodes[val[K_PAYLOAD]].type != T_OBJ)
        return 0;
    if (!is_hex(L, &L->nodes[val[K_PREV]], 64) || !is_hex(L, &L->nodes[val[K_HASH]], 64))
        return 0;
    return 1;
}

/* --- numbers with a fraction or exponent ---------------------------------- */

/* ECMAScript Number::toString (RFC 8785 §3.2.2.3) of the value 0.<d> x 10^n, where d
 * holds the k >= 1 shortest round-trip digits (no leading or trailing zero); the same
 * layout as canonical.format_number. Returns the length, or -1. */
static int es_digits(const char *d, size_t k, long n, int neg, char *out, size_t cap)
{
    char buf[64];
    size_t o = 0;
    if (k == 0 || k > 20)
        return -1;
    if (neg)
        buf[o++] = '-';
    if ((long)k <= n && n <= 21) {
        memcpy(buf + o, d, k);
        o += k;
        for (long z = 0; z < n - (long)k; z++)
            buf[o++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(buf + o, d, (size_t)n);
        o += (size_t)n;
        buf[o++] = '.';
        memcpy(buf + o, d + n, k - (size_t)n);
        o += k - (size_t)n;
    } else if (-6 < n && n <= 0) {
        buf[o++] = '0';
        buf[o++] = '.';
        for (long z = 0; z < -n; z++)
            buf[o++] = '0';
        memcpy(buf + o, d, k);
        o += k;
    } else {
        long x = n - 1;
        if (x > 99999 || x < -99999)
            return -1;
        buf[o++] = d[0];
        if (k > 1) {
            buf[o++] = '.';
            memcpy(buf + o, d + 1, k - 1);
            o += k - 1;
        }
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, "e%c%ld", x >= 0 ? '+' : '-', x >= 0 ? x : -x);
    }
    if (o >= cap)
        return -1;
    memcpy(out, buf, o);
    out[o] = '\0';
    return (int)o;
}

/* The same from repr's shortest round-trip text of |x| (x != 0). */
static int es_layout(const char *r, int neg, char *out, size_t cap)
{
    const char *e = strchr(r, 'e');
    size_t mlen = e ? (size_t)(e - r) : strlen(r);
    long exp = 0;
    if (e) {
        const char *q = e + 1;
        int eneg = *q == '-';
        if (*q == '-' || *q == '+')
            q++;
        for (; is_digit((uint8_t)*q) && exp < 100000; q++)
            exp = exp * 10 + (*q - '0');
        if (eneg)
            exp = -exp;
    }
    char digs[40];
    size_t nd = 0, ilen = mlen;
    for (size_t i = 0; i < mlen; i++) {
        if (r[i] == '.') {
            ilen = i;
            continue;
        }
        if (!is_digit((uint8_t)r[i]) || nd >= sizeof(digs))
            return -1;
        digs[nd++] = r[i];
    }
    size_t lz = 0;
    while (lz < nd && digs[lz] == '0')
        lz++;
    const char *d = digs + lz;
    size_t k = nd - lz;
    while (k > 0 && d[k - 1] == '0')
        k--;
    return es_digits(d, k, (long)ilen + exp - (long)lz, neg, out, cap);
}

static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* d from the token's digits (digs, nd; value D x 10^e) and its double magnitude v: 1, or 0 (no canonical form
 * fits, convert_doubles decides). */
static int dbl_done(Dbl *d, const char *digs, size_t nd, long e, int neg, double v)
{
    int n = es_digits(digs, nd, (long)nd + e, neg, d->txt, sizeof(d->txt));
    if (n < 0)
        return 0;
    d->v = neg ? -v : v;
    d->tlen = (uint32_t)n;
    d->done = 1;
    return 1;
}

#if defined(__x86_64__) && LDBL_MANT_DIG == 64
/* 16 and 17 significant digits: what Python's repr and orjson write for most doubles (random.random(),
 * a latency of 123.45678901234567). With the GIL, each cost ~1.3 us in convert_doubles; here, in x87
 * extended precision (a 64-bit significand), ~30 ns. */
#define LD_DIGITS 17
static const long double P10L[28] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                     1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                     1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L}; /* exact: 5^27 < 2^64 */

static int g_ld_extended; /* long double arithmetic really has 64 bits (ld_probe, at import) */

/* Whether long double arithmetic carries its 64 bits: the control word is no proof (valgrind reports
 * 0x37F, yet computes x87 operations in double precision, and the digits would be wrong): 1/3 must round to
 * 0xAAAAAAAAAAAAAAAB. */
static void ld_probe(void)
{
    volatile long double one = 1, three = 3;
    long double r = one / three;
    uint64_t bits;
    memcpy(&bits, &r, sizeof bits);
    g_ld_extended = bits == 0xAAAAAAAAAAAAAAABULL;
}

/* The correctly rounded double of m / 10^k (m < 2^64, 0 <= k <= 27) in *v; 0 when undecided. The quotient is
 * rounded once, to 64 bits: within half a unit of that (2^-11 of a double's unit) of the exact quotient.
 * Rounding it on to 53 bits is then the correct rounding of the exact quotient unless its 11 bits below
 * the double sit next to the halfway pattern (0x400), where the two roundings may differ. */
static int ld_quotient(uint64_t m, int k, double *v)
{
    long double r = (long double)m / P10L[k]; /* (normal: from 10^-27 to below 2^64; 0 for m = 0) */
    uint64_t bits;
    memcpy(&bits, &r, sizeof bits); /* x87's 80-bit format: the 64-bit significand first, its top bit explicit */
    if (!(bits >> 63))
        return 0; /* zero (no significand to round) */
    unsigned low = (unsigned)(bits & 0x7FF);
    if (low >= 0x3FF && low <= 0x401)
        return 0;
    *v = (double)r;
    return 1;
}

/* fast_double for D x 10^-k with 16 or 17 significant digits D (digs, nd; its value m): 1 when D is what repr() writes
 * for its double, the shortest digits that read back as it and of those the closest, so also its
 * canonical digits; else 0 (convert_doubles decides). Checked: (a) D / 10^k read correctly rounded (v);
 * (b) D is the nd-digit decimal closest to v: |D - v 10^k| < 0.5, computed with an error under 2^-8
 * (v 10^k is below 2^57, rounded to 64 bits; the difference is then exact); (c) neither nd-1 digit decimal
 * next to D (D / 10 rounded down and up) reads back as v: were any shorter decimal to, one of those two
 * would, since those that read back as v fill an interval around D, and D / 10 lies strictly between the
 * two (D's last digit is not 0: the parser keeps trailing zeros out of digs, in pend). */
static int long_double(const char *digs, size_t nd, uint64_t m, long e, int neg, Dbl *d)
{
    unsigned short cw; /* x87's control word: every step above assumes 64-bit precision, to nearest */
    __asm__ __volatile__("fnstcw %0" : "=m"(cw));
    if (!g_ld_extended || (cw & 0xF00) != 0x300 || e >= 0 || e < -27)
        return 0;
    int k = (int)-e;
    double v, shorter;
    if (!ld_quotient(m, k, &v))
        return 0;
    long double off = (long double)m - (long double)v * P10L[k];
    if (!(off < 0.49L && off > -0.49L))
        return 0;
    for (uint64_t c = m / 10; c <= m / 10 + 1; c++)
        if (!ld_quotient(c, k - 1, &shorter) || shorter == v)
            return 0;
    return dbl_done(d, digs, nd, e, neg, v);
}
#else
#define LD_DIGITS 15
#endif

/* A number token with a fraction or exponent, without dtoa (so without the GIL), when
 * that is exact; 0 leaves it to convert_doubles.
 *
 * Exactness: the token is D x 10^e with D the significant digits. With at most 15
 * of them D < 2^53 is an exact double, and so is 10^|e| for |e| <= 22; one IEEE
 * multiplication or division then rounds the exact quotient once: the correctly
 * rounded double, which is what float() gives (Clinger's fast path). Its shortest
 * round-trip digits are D itself: every decimal of at most 15 significant digits
 * survives decimal -> double -> 15 digits (DBL_DIG, normal range), so no other
 * decimal of at most 15 digits, in particular none shorter, maps to the same double. */
static int fast_double(const uint8_t *s, size_t len, Dbl *d)
{
    size_t p = 0;
    int neg = 0, frac = 0;
    char digs[LD_DIGITS + 1];
    size_t nd = 0;
    long pend = 0, fracdigits = 0, ex = 0;
    if (p < len && s[p] == '-') {
        neg = 1;
        p++;
    }
    for (; p < len; p++) {
        uint8_t c = s[p];
        if (c == '.') {
            frac = 1;
            continue;
        }
        if (!is_digit(c))
            break;
        if (frac)
            fracdigits++;
        if (c == '0') {
            if (nd)
                pend++;
            continue;
        }
        if (nd + (size_t)pend + 1 > LD_DIGITS)
            return 0;
        while (pend) {
            digs[nd++] = '0';
            pend--;
        }
        digs[nd++] = (char)c;
    }
    if (fracdigits > 100000)
        return 0;
    if (p < len && (s[p] == 'e' || s[p] == 'E')) {
        int eneg = 0;
        p++;
        if (p < len && (s[p] == '+' || s[p] == '-'))
            eneg = s[p++] == '-';
        for (; p < len && is_digit(s[p]); p++) {
            ex = ex * 10 + (s[p] - '0');
            if (ex > 100000)
                return 0;
        }
        if (eneg)
            ex = -ex;
    }
    if (p != len)
        return 0;
    if (nd == 0) {
        d->v = neg ? -0.0 : 0.0;
        memcpy(d->txt, "0", 2); /* also -0.0 */
        d->tlen = 1;
        d->done = 1;
        return 1;
    }
    long e = ex - fracdigits + pend; /* value = D x 10^e */
    uint64_t m = 0;
    for (size_t i = 0; i < nd; i++)
        m = m * 10 + (uint64_t)(digs[i] - '0');
#if LD_DIGITS > 15
    if (nd > 15)
        return long_double(digs, nd, m, e, neg, d);
#endif
    long e2 = e;
    while (e2 > 22 && m < 100000000000000ULL) { /* m * 10 stays below 10^15 */
        m *= 10;
        e2--;
    }
    double v;
    if (e2 >= 0 && e2 <= 22)
        v = (double)m * P10[e2];
    else if (e2 < 0 && e2 >= -22)
        v = (double)m / P10[-e2];
    else
        return 0;
    return dbl_done(d, digs, nd, e, neg, v);
}

/* Every double of the line without the GIL where exact; 1 when all are done. */
static int fast_doubles(Line *L)
{
    int all = 1;
    for (size_t i = 0; i < L->dn; i++) {
        Dbl *dd = &L->dbls[i];
        if (!dd->done && !fast_double(L->src + dd->off, dd->len, dd))
            all = 0;
    }
    return all;
}

/* The rest, with dtoa (GIL held). 1 ok, 0 the line is not acceptable (infinity), -1 exception set. */
static int convert_doubles(Line *L)
{
    char small[64];
    for (size_t i = 0; i < L->dn; i++) {
        Dbl *dd = &L->dbls[i];
        if (dd->done)
            continue;
        char *tok = small;
        if (dd->len >= sizeof(small)) {
            tok = PyMem_Malloc(dd->len + 1);
            if (!tok) {
                PyErr_NoMemory();
                return -1;
            }
        }
        memcpy(tok, L->src + dd->off, dd->len);
        tok[dd->len] = '\0';
        char *end = NULL;
        double x = PyOS_string_to_double(tok, &end, NULL); /* float()'s own conversion */
        int whole = end == tok + dd->len;
        if (tok != small)
            PyMem_Free(tok);
        if (x == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_MemoryError))
                return -1;
            PyErr_Clear();
            return 0;
        }
        if (!whole || !isfinite(x))
            return 0; /* 1e400: Python's float is inf, which has no canonical form */
        dd->v = x;
        if (x == 0) {
            memcpy(dd->txt, "0", 2); /* also -0.0 */
            dd->tlen = 1;
            dd->done = 1;
            continue;
        }
        char *r = PyOS_double_to_string(fabs(x), 'r', 0, 0, NULL);
        if (!r)
            return -1;
        int n = es_layout(r, x < 0, dd->txt, sizeof(dd->txt));
        PyMem_Free(r);
        if (n < 0)
            return 0;
        dd->tlen = (uint32_t)n;
        dd->done = 1;
    }
    return 1;
}

/* --- canonical bytes (no GIL) --------------------------------------------- */

/* Every write is checked against the buffer: running out is -2 when the bytes are kept
 * (to_canonical then reserves the worst case and starts over), never a write past the end.
 * Streaming (L->sink set): a full buffer is fed to the digest and reused; -3 when the
 * digest fails. */
static int feed_out(Line *L)
{
    if (L->on && !sha_update(L->sink, L->out, L->on))
        return -3;
    L->on = 0;
    return 0;
}

static inline int put(Line *L, const void *t, size_t n)
{
    if (L->ocap - L->on < n) {
        if (!L->sink)
            return -2;
        if (feed_out(L) < 0)
            return -3;
        if (n > L->ocap) /* longer than the buffer: straight to the digest */
            return sha_update(L->sink, t, n) ? 0 : -3;
    }
    memcpy(L->out + L->on, t, n);
    L->on += n;
    return 0;
}

static inline int put1(Line *L, uint8_t c)
{
    if (L->on >= L->ocap) {
        if (!L->sink)
            return -2;
        if (feed_out(L) < 0)
            return -3;
    }
    L->out[L->on++] = c;
    return 0;
}

static const char HEXD[] = "0123456789abcdef"; /* lowercase, as JCS escapes and SPEC §2.4 hashes are written */

/* One decoded byte JCS escapes ('"', '\\', < 0x20), escaped. */
static int put_special(Line *L, uint8_t c)
{
    if (c == '"' || c == '\\') {
        uint8_t esc[2] = {'\\', c};
        return put(L, esc, 2);
    }
    uint8_t esc[6] = {'\\', 'u', '0', '0', (uint8_t)HEXD[c >> 4], (uint8_t)HEXD[c & 15]};
    uint8_t sh = c == '\b' ? 'b' : c == '\t' ? 't' : c == '\n' ? 'n' : c == '\f' ? 'f' : c == '\r' ? 'r' : 0;
    if (sh) {
        esc[1] = sh;
        return put(L, esc, 2);
    }
    return put(L, esc, 6);
}

/* An S_LAZY string, decoded again from its token (validated by the parser) as it is written. */
static int emit_lazy(Line *L, const Node *n)
{
    const uint8_t *s = L->src;
    size_t len = L->len, p = n->u.s.off;
    int r = put1(L, '"'), special = 0, ascii = 1;
    while (r == 0) {
        size_t q = plain_run(s, len, p), k;
        if (q > p && (r = put(L, s + p, q - p)) != 0)
            return r;
        p = q;
        if (p >= len)
            return -2; /* cannot happen: the parser found the closing quote */
        uint8_t c = s[p], buf[4];
        if (c == '"')
            break;
        if (c == '\\') {
            if (!(k = decode_escape(s, len, &p, buf, &special, &ascii)))
                return -2;
            r = (k == 1 && (buf[0] < 0x20 || buf[0] == '"' || buf[0] == '\\')) ? put_special(L, buf[0]) : put(L, buf, k);
        } else {
            size_t end = c < 0x80 ? 0 : utf8_run(s, len, p);
            if (!end)
                return -2;
            r = put(L, s + p, end - p);
            p = end;
        }
    }
    return r ? r : put1(L, '"');
}

static int emit_str(Line *L, const Node *n)
{
    if (n->flags & S_LAZY)
        return emit_lazy(L, n);
    const uint8_t *p = str_ptr(L, n);
    size_t k = n->u.s.len;
    int r;
    if (!(n->flags & S_SPECIAL)) {
        if (L->ocap - L->on >= k + 2) {
            uint8_t *o = L->out + L->on;
            o[0] = '"';
            memcpy(o + 1, p, k);
            o[k + 1] = '"';
            L->on += k + 2;
            return 0;
        }
        if ((r = put1(L, '"')) != 0 || (r = put(L, p, k)) != 0)
            return r;
        return put1(L, '"');
    }
    r = put1(L, '"');
    for (size_t i = 0; i < k && r == 0;) { /* runs between the bytes JCS escapes, written at once */
        size_t j = escape_run(p, k, i);
        if (j > i)
            r = put(L, p + i, j - i);
        if (r == 0 && j < k)
            r = put_special(L, p[j]);
        i = j + 1;
    }
    return r ? r : put1(L, '"');
}

/* Recursion is bounded by the parser's MAX_DEPTH. skip: a root key node to leave out, or NONE. */
static int emit(Line *L, uint32_t ni, uint32_t skip)
{
    const Node *n = &L->nodes[ni];
    int r;
    if (n->type == T_STR) /* the common case, ahead of the jump table */
        return emit_str(L, n);
    switch (n->type) {
    case T_NULL:
        return put(L, "null", 4);
    case T_TRUE:
        return put(L, "true", 4);
    case T_FALSE:
        return put(L, "false", 5);
    case T_INT:
        /* an integer token is its own exact canonical form (no '+', no leading zero), but "-0" */
        if (n->u.n.i == 0)
            return put1(L, '0');
        return put(L, L->src + n->u.n.off, n->flags);
    case T_DBL: {
        const Dbl *d = &L->dbls[n->u.slot];
        return put(L, d->txt, d->tlen);
    }
    case T_STR:
        return emit_str(L, n);
    case T_ARR: {
        if ((r = put1(L, '[')) != 0)
            return r;
        uint32_t c = n->u.c.first;
        for (uint32_t i = 0; i < n->u.c.count; i++) {
            if ((i && (r = put1(L, ',')) != 0) || (r = emit(L, c, NONE)) != 0)
                return r;
            c = L->nodes[c].next;
        }
        return put1(L, ']');
    }
    case T_OBJ: {
        if ((r = put1(L, '{')) != 0)
            return r;
        uint32_t count = n->u.c.count, base = n->u.c.perm;
        int first = 1;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t k = L->perm[base + i];
            if (k == skip)
                continue;
            const Node *kn = &L->nodes[k];
            size_t kl = kn->u.s.len;
            if (!(kn->flags & S_SPECIAL) && L->ocap - L->on >= kl + 4) { /* ,"key": in one go */
                uint8_t *o = L->out + L->on;
                if (!first)
                    *o++ = ',';
                *o++ = '"';
                memcpy(o, str_ptr(L, kn), kl);
                o += kl;
                *o++ = '"';
                *o++ = ':';
                L->on = (size_t)(o - L->out);
            } else if ((!first && (r = put1(L, ',')) != 0) || (r = emit_str(L, kn)) != 0 || (r = put1(L, ':')) != 0)
                return r;
            if ((r = emit(L, kn->next, NONE)) != 0)
                return r;
            first = 0;
        }
        return put1(L, '}');
    }
    }
    return -2;
}

/* The envelope without "hash": its eight keys in canonical (UTF-16) order. */
static int emit_envelope(Line *L)
{
    static const struct {
        int slot;
        const char *text;
        size_t len;
    } order[8] = {
        {K_ID, "{\"id\":", 6},
        {K_KIND, ",\"kind\":", 8},
        {K_PARENT_ID, ",\"parent_id\":", 13},
        {K_PAYLOAD, ",\"payload\":", 11},
        {K_PREV, ",\"prev_hash\":", 13},
        {K_RUN_ID, ",\"run_id\":", 10},
        {K_STEP_ID, ",\"step_id\":", 11},
        {K_TS, ",\"timestamp_ns\":", 16},
    };
    int r;
    for (int i = 0; i < 8; i++)
        if ((r = put(L, order[i].text, order[i].len)) != 0 || (r = emit(L, L->val[order[i].slot], NONE)) != 0)
            return r;
    return put1(L, '}');
}

/* The canonical bytes into L->out (kept whole: the canonical() function), of the whole value
 * (skip == NONE), or of a checked envelope without its "hash" member (skip: that key's node).
 * 0 ok, -1 out of memory, -2 an internal error. The output is never longer than the line plus 26 bytes per
 * double (a string's escapes in the output are never longer than they were in the
 * line, an integer never gains a digit, a double's text is at most 25 characters),
 * so the first reservation suffices; the second is a belt for the braces. */
static int to_canonical(Line *L, uint32_t skip)
{
    size_t want = L->len + 32 * L->dn + 64;
    L->sink = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        L->on = 0;
        if (GROW(L, out, ocap, want) < 0)
            return -1;
        int r = skip == NONE ? emit(L, 0, NONE) : emit_envelope(L);
        if (r == 0)
            return 0;
        if (L->len > (SIZE_MAX - 64) / 8)
            return -1;
        want = 6 * L->len + 32 * L->dn + 64;
    }
    return -2; /* cannot happen: the worst case of every string escaped to \u00xx */
}

/* --- the vocabulary (SPEC §2.5-2.6), compiled from ract_cli.format.kinds ---- */

/* JSON type names of model.Field.type, as bits */
enum { J_STRING = 1, J_INTEGER = 2, J_NUMBER = 4, J_BOOLEAN = 8, J_OBJECT = 16, J_ARRAY = 32, J_NULL = 64 };
static const char *const JSON_TYPE_NAMES[7] = {"string", "integer", "number", "boolean", "object", "array", "null"};

enum { E_STR, E_TRUE, E_FALSE, E_NULL };

typedef struct {
    uint8_t kind;
    uint32_t len;
    char *s; /* E_STR: UTF-8 */
} EnumVal;

/* One model.Field: what model._field_checker checks, for the values C can judge. */
typedef struct {
    char *name; /* UTF-8 */
    uint32_t nlen;
    unsigned types; /* J_* bits */
    unsigned items; /* J_* bit of the array items, 0: unchecked */
    uint8_t python; /* C cannot say: a present value needs the Python validator */
    uint8_t has_enum, has_min, has_max, has_max_length, has_max_items, has_hex;
    double min, max; /* |bound| <= 2^53: compared exactly with any int64 or double */
    int64_t max_length, max_items;
    uint32_t hexlen; /* pattern [0-9a-f]{hexlen} */
    uint32_t nenum;
    EnumVal *enums;
} FieldDef;

typedef struct KindEntry {
    char *name; /* UTF-8 */
    uint32_t nlen;
    uint8_t known;      /* KindDef.version <= the Verifier's schema version */
    uint8_t invariants; /* KindDef.invariants: the Python validator always runs */
    uint8_t want;       /* compact results carry the payload: 1 whole, 2 only the keep keys */
    uint8_t whole;      /* check_block's found carries the whole event, (event, hash) as check_line(full=True) */
    uint8_t pairable;   /* an open check_block may pair in C with a close of a kind whose pair_open it is */
    uint8_t closes;     /* a close of an open (compile_kinds' closes): handed out, it ends every pairing in C */
    const struct KindEntry *pair_open; /* a close: the open kind check_block pairs it with (NULL: none) */
    uint32_t nkeep;
    EnumVal *keep; /* want == 2: the payload keys kept (E_STR) */
    uint32_t nfields;
    FieldDef *fields; /* in canonical key order (utf16_cmp), equal names adjacent */
    PyObject *validator;
    PyObject *name_obj; /* the kind, interned */
} KindEntry;

typedef struct {
    PyObject_HEAD long schema_version;
    uint32_t nkinds;
    KindEntry *kinds;
    uint32_t tmask;
    uint32_t *table; /* open addressing: kind index or NONE */
} Verifier;

/* A kind's slot in the table: its length and first and last eight bytes, mixed (a few cycles, where a
 * byte-at-a-time hash is a chain of one multiply per byte). Names that share all three only probe
 * further; the table is fixed at import, so no log can make a probe longer than its longest run. */
static inline uint32_t kind_hash(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = n;
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
        b ^= n;
    } else
        for (size_t i = 0; i < n; i++)
            a = a << 8 | p[i];
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xFF51AFD7ED558CCDULL;
    return (uint32_t)(h >> 32);
}

static const KindEntry *kind_lookup(const Verifier *V, const uint8_t *p, size_t n)
{
    uint32_t i = kind_hash(p, n) & V->tmask;
    for (;;) {
        uint32_t k = V->table[i];
        if (k == NONE)
            return NULL;
        const KindEntry *e = &V->kinds[k];
        if (e->nlen == n && memcmp(e->name, p, n) == 0)
            return e;
        i = (i + 1) & V->tmask;
    }
}

/* model._is_type for a parsed value */
static inline int node_is(const Line *L, const Node *n, unsigned types)
{
    switch (n->type) {
    case T_STR:
        return (types & J_STRING) != 0;
    case T_INT:
        return (types & (J_INTEGER | J_NUMBER)) != 0;
    case T_DBL: {
        if (types & J_NUMBER)
            return 1;
        double v = L->dbls[n->u.slot].v; /* finite: float.is_integer() */
        return (types & J_INTEGER) && v == floor(v);
    }
    case T_TRUE:
    case T_FALSE:
        return (types & J_BOOLEAN) != 0;
    case T_OBJ:
        return (types & J_OBJECT) != 0;
    case T_ARR:
        return (types & J_ARRAY) != 0;
    case T_NULL:
        return (types & J_NULL) != 0;
    }
    return 0;
}

static inline size_t code_points(const uint8_t *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (p[i] & 0xC0) != 0x80;
    return c;
}

enum { PV_OK, PV_BAD, PV_PY };

/* model._field_checker(f)(value) is None? */
static int check_field(const Line *L, const FieldDef *f, const Node *v)
{
    if (f->python)
        return PV_PY;
    if (!node_is(L, v, f->types))
        return PV_BAD;
    if (v->type == T_STR && (v->flags & S_LAZY) && (f->has_enum || f->has_max_length || f->has_hex))
        return PV_PY; /* its bytes are not at hand: the Python validator judges the value */
    if (f->has_enum) {
        /* compile_field leaves to Python every enum where a number could equal an entry
         * (1 == True) or a value could be unhashable (an object or array type) */
        int found = 0;
        for (uint32_t i = 0; i < f->nenum && !found; i++) {
            const EnumVal *e = &f->enums[i];
            switch (v->type) {
            case T_STR:
                found = e->kind == E_STR && e->len == v->u.s.len && memcmp(e->s, str_ptr(L, v), e->len) == 0;
                break;
            case T_TRUE:
                found = e->kind == E_TRUE;
                break;
            case T_FALSE:
                found = e->kind == E_FALSE;
                break;
            case T_NULL:
                found = e->kind == E_NULL;
                break;
            default:
                break;
            }
        }
        if (!found)
            return PV_BAD;
    }
    switch (v->type) {
    case T_INT: {
        /* exact: |bound| <= 2^53, so (double)i rounds only where i is beyond the bound anyway */
        double x = (double)v->u.n.i;
        if ((f->has_min && x < f->min) || (f->has_max && x > f->max))
            return PV_BAD;
        break;
    }
    case T_DBL: {
        double x = L->dbls[v->u.slot].v;
        if ((f->has_min && x < f->min) || (f->has_max && x > f->max))
            return PV_BAD;
        break;
    }
    case T_STR: {
        size_t n = v->u.s.len;
        if (f->has_max_length && (f->max_length < 0 || (uint64_t)n > (uint64_t)f->max_length) &&
            (f->max_length < 0 || (uint64_t)code_points(str_ptr(L, v), n) > (uint64_t)f->max_length))
            return PV_BAD;
        if (f->has_hex && !(n == f->hexlen && all_hex(str_ptr(L, v), n)))
            return PV_BAD;
        break;
    }
    case T_ARR: {
        uint32_t count = v->u.c.count;
        if (f->has_max_items && (f->max_items < 0 || (uint64_t)count > (uint64_t)f->max_items))
            return PV_BAD;
        if (f->items) {
            uint32_t c = v->u.c.first;
            for (uint32_t i = 0; i < count; i++) {
                if (!node_is(L, &L->nodes[c], f->items))
                    return PV_BAD;
                c = L->nodes[c].next;
            }
        }
        break;
    }
    default:
        break;
    }
    return PV_OK;
}

/* model.compile_validator(kind)(payload) == [] ? PV_PY: only the Python validator can say. */
static int check_payload(const Line *L, const KindEntry *k)
{
    int py = k->invariants;
    const Node *pl = &L->nodes[L->val[K_PAYLOAD]];
    uint32_t cnt = pl->u.c.count, base = pl->u.c.perm;
    uint32_t i = 0, j = 0;
    /* both sides in canonical key order: a merge join */
    while (i < cnt && j < k->nfields) {
        const Node *kn = &L->nodes[L->perm[base + i]];
        const FieldDef *f = &k->fields[j];
        int c = utf16_cmp(str_ptr(L, kn), kn->u.s.len, (const uint8_t *)f->name, f->nlen);
        if (c < 0)
            i++;
        else if (c > 0)
            j++;
        else {
            int r = check_field(L, f, &L->nodes[kn->next]);
            if (r == PV_BAD)
                return PV_BAD;
            if (r == PV_PY)
                py = 1;
            j++; /* a second field of the same name checks the same value */
        }
    }
    return py ? PV_PY : PV_OK;
}

/* --- the stages of one line (no GIL) -------------------------------------- */

/* Payload (Verifier mode), canonical form without "hash", SHA-256, compare with the stored hash. */
static inline uint32_t id_hash(uint64_t hi, uint64_t lo);
static void hex128(const uint8_t *p, uint64_t *hi, uint64_t *lo);
static inline uint64_t hex16(const uint8_t *p);

/* Eight bytes as a big-endian number. */
static inline uint64_t be64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
#endif
}

static void finish_check(Line *L, Sha *sha)
{
    if (L->kind) {
        int pv = check_payload(L, L->kind);
        if (pv == PV_BAD) {
            L->status = ST_BAD; /* PAYLOAD_INVALID */
            return;
        }
        L->need_py = pv == PV_PY;
    }
    uint8_t md[32];
    /* the canonical form without "hash", fed to SHA-256 as it is written (never held whole) */
    if (GROW(L, out, ocap, STREAM_BYTES) < 0) {
        L->status = ST_NOMEM;
        return;
    }
    L->on = 0;
    if (!sha_init(sha)) {
        L->status = ST_BAD; /* never guess: the Python path decides */
        return;
    }
    L->sink = sha;
    int r = emit_envelope(L);
    if (r == 0)
        r = feed_out(L);
    L->sink = NULL;
    L->on = 0;
    if (r != 0) {
        L->status = r == -1 ? ST_NOMEM : r == -2 ? ST_INTERNAL : ST_BAD;
        return;
    }
    if (!sha_final(sha, md)) {
        L->status = ST_BAD;
        return;
    }
    /* the stored hash (64 lowercase hex digits, checked) read as 32 bytes: no hex text unless they differ */
    const uint8_t *stored = str_ptr(L, &L->nodes[L->val[K_HASH]]);
    uint64_t diff = 0;
    for (unsigned i = 0; i < 4; i++)
        diff |= hex16(stored + 16 * i) ^ be64(md + 8 * i);
    if (!diff) {
        L->status = ST_OK;
        hex128(str_ptr(L, &L->nodes[L->val[K_ID]]), &L->id_hi, &L->id_lo);
        L->id_h = id_hash(L->id_hi, L->id_lo);
        return;
    }
    /* HASH_MISMATCH */
    for (unsigned i = 0; i < 32; i++) {
        L->computed[2 * i] = (uint8_t)HEXD[md[i] >> 4];
        L->computed[2 * i + 1] = (uint8_t)HEXD[md[i] & 15];
    }
    L->status = L->need_py ? ST_BAD : ST_HASH_BAD;
}

/* Parse, envelope, kind (V: a Verifier, or NULL for no kind and payload checks); then the
 * rest unless a double needs dtoa (and so the GIL) first. */
static void stage_one(Line *L, Sha *sha, const Verifier *V)
{
    L->envelope = 1;
    int r = parse(L);
    if (r < 0) {
        L->status = ST_NOMEM;
        return;
    }
    if (r == 0 || !check_envelope(L)) {
        L->status = ST_BAD;
        return;
    }
    if (V) {
        const Node *kn = &L->nodes[L->val[K_KIND]];
        const KindEntry *k = (kn->flags & S_LAZY) ? NULL : kind_lookup(V, str_ptr(L, kn), kn->u.s.len);
        if (!k || !k->known) {
            L->status = ST_BAD; /* UNKNOWN_KIND */
            return;
        }
        L->kind = k;
    }
    if (L->dn && !fast_doubles(L)) {
        L->status = ST_NEED_DBL;
        return;
    }
    finish_check(L, sha);
}

/* ST_NEED_DBL -> ST_READY or ST_BAD (GIL held). -1: exception set. */
static int stage_doubles(Line *L)
{
    int r = convert_doubles(L);
    if (r < 0)
        return -1;
    L->status = r ? ST_READY : ST_BAD;
    return 0;
}

/* --- Python objects (GIL held) -------------------------------------------- */

#define KC_SIZE 4096 /* even: two-way sets */
#define KC_MAXLEN 64
static PyObject *g_kcache[KC_SIZE]; /* short ASCII keys and kinds, interned; GIL held */

/* The code point of the valid UTF-8 sequence of k (1..4) bytes at p. */
static inline uint32_t utf8_cp(const uint8_t *p, size_t k)
{
    switch (k) {
    case 1:
        return p[0];
    case 2:
        return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3Fu);
    case 3:
        return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3Fu);
    default:
        return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) | ((uint32_t)(p[2] & 0x3F) << 6) |
               (p[3] & 0x3Fu);
    }
}

static inline size_t utf8_len(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

/* A long non-ASCII string from validated UTF-8, sized once: PyUnicode_DecodeUTF8 would widen its
 * buffer at the first wider character, holding both copies for a moment. */
static PyObject *make_wide(const uint8_t *p, size_t n)
{
    size_t chars = 0;
    uint32_t maxc = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p[i]);
        if (k > n - i)
            goto corrupt;
        uint32_t cp = utf8_cp(p + i, k);
        if (cp > maxc)
            maxc = cp;
        chars++;
        i += k;
    }
    PyObject *u = PyUnicode_New((Py_ssize_t)chars, maxc);
    if (!u)
        return NULL;
    int kind = PyUnicode_KIND(u);
    void *data = PyUnicode_DATA(u);
    size_t at = 0;
    for (size_t i = 0; i < n && at < chars; at++) {
        size_t k = utf8_len(p[i]);
        if (k > n - i) {
            Py_DECREF(u);
            goto corrupt;
        }
        PyUnicode_WRITE(kind, data, at, utf8_cp(p + i, k));
        i += k;
    }
    if (at != chars) {
        Py_DECREF(u);
        goto corrupt;
    }
    return u;
corrupt:
    PyErr_SetString(PyExc_SystemError, "ract_cli._core: corrupt string");
    return NULL;
}

static PyObject *make_str(const uint8_t *p, size_t n, int ascii)
{
    if (ascii) {
        PyObject *s = PyUnicode_New((Py_ssize_t)n, 127);
        if (s)
            memcpy(PyUnicode_1BYTE_DATA(s), p, n);
        return s;
    }
    if (n > SCRATCH_CAP)
        return make_wide(p, n);
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict"); /* already validated */
}

/* An S_LAZY string: its token decoded twice (the parser validated it), first to size the str,
 * then into it. */
static PyObject *make_lazy(const Line *L, const Node *n)
{
    const uint8_t *s = L->src;
    size_t len = L->len, chars = 0;
    uint32_t maxc = 0;
    PyObject *u = NULL;
    int kind = 0, special = 0, ascii = 1;
    void *data = NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t p = n->u.s.off, at = 0;
        if (pass) {
            if (!(u = PyUnicode_New((Py_ssize_t)chars, maxc)))
                return NULL;
            kind = PyUnicode_KIND(u);
            data = PyUnicode_DATA(u);
        }
        for (;;) {
            size_t q = plain_run(s, len, p), k;
            if (q > p) {
                if (!pass) {
                    chars += q - p;
                    if (maxc < 0x7F)
                        maxc = 0x7F; /* an ASCII run: 127 rounds it up within its kind */
                } else {
                    if (q - p > chars - at)
                        goto corrupt;
                    if (kind == PyUnicode_1BYTE_KIND)
                        memcpy((uint8_t *)data + at, s + p, q - p);
                    else
                        for (size_t j = p; j < q; j++)
                            PyUnicode_WRITE(kind, data, at + (j - p), s[j]);
                    at += q - p;
                }
                p = q;
            }
            if (p >= len)
                goto corrupt;
            uint8_t c = s[p], buf[4];
            if (c == '"')
                break;
            if (c == '\\') {
                if (!(k = decode_escape(s, len, &p, buf, &special, &ascii)))
                    goto corrupt;
            } else {
                if (c < 0x80 || !(k = utf8_seq(s + p, len - p)))
                    goto corrupt;
                memcpy(buf, s + p, k);
                p += k;
            }
            uint32_t cp = utf8_cp(buf, k);
            if (!pass) {
                chars++;
                if (cp > maxc)
                    maxc = cp;
            } else {
                if (at >= chars)
                    goto corrupt;
                PyUnicode_WRITE(kind, data, at, cp);
                at++;
            }
        }
        if (pass && at != chars)
            goto corrupt;
    }
    return u;
corrupt:
    Py_XDECREF(u);
    PyErr_SetString(PyExc_SystemError, "ract_cli._core: corrupt string");
    return NULL;
}

/* A cheap hash of a short key: its length and first and last bytes. */
static inline uint32_t key_hash(const uint8_t *p, size_t n)
{
    uint64_t a, b;
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        a = x;
        b = y;
    } else {
        a = n ? (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16 : 0;
        b = 0;
    }
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ULL) ^ n) * 0xFF51AFD7ED558CCDULL;
    return (uint32_t)(h >> 32);
}

static inline int cached_is(PyObject *c, const uint8_t *p, size_t n)
{
    if (!c || PyUnicode_GET_LENGTH(c) != (Py_ssize_t)n)
        return 0;
    const uint8_t *q = PyUnicode_1BYTE_DATA(c); /* every cached string is ASCII */
    size_t i = 0;
    while (i < n && q[i] == p[i])
        i++;
    return i == n;
}

/* Short ASCII keys (and kinds) as interned strings, from a two-way cache. */
static PyObject *make_cached(const uint8_t *p, size_t n, int ascii)
{
    if (!ascii || n > KC_MAXLEN)
        return make_str(p, n, ascii);
    PyObject **set = &g_kcache[key_hash(p, n) & (KC_SIZE - 2)];
    if (cached_is(set[0], p, n))
        return Py_NewRef(set[0]);
    if (cached_is(set[1], p, n)) {
        PyObject *t = set[0]; /* most recent first */
        set[0] = set[1];
        set[1] = t;
        return Py_NewRef(set[0]);
    }
    PyObject *s = make_str(p, n, 1);
    if (!s)
        return NULL;
    PyUnicode_InternInPlace(&s);
    Py_XSETREF(set[1], set[0]);
    set[0] = Py_NewRef(s);
    return s;
}

static PyObject *build(const Line *L, uint32_t ni);

/* An object in the line's order. hash_out (the root only): the "hash" value, a new reference. */
static PyObject *build_object(const Line *L, uint32_t ni, PyObject **hash_out)
{
    const Node *n = &L->nodes[ni];
#if PY_VERSION_HEX < 0x030E0000
    /* sized once (an envelope's nine keys would otherwise resize it) */
    PyObject *d = n->u.c.count > 5 ? _PyDict_NewPresized((Py_ssize_t)n->u.c.count) : PyDict_New();
#else
    PyObject *d = PyDict_New();
#endif
    if (!d)
        return NULL;
    uint32_t k = n->u.c.first;
    for (uint32_t i = 0; i < n->u.c.count; i++) {
        const Node *kn = &L->nodes[k];
        uint32_t vi = kn->next;
        PyObject *key = make_cached(str_ptr(L, kn), kn->u.s.len, kn->flags & S_ASCII);
        if (!key)
            goto fail;
        PyObject *val;
        if (hash_out && vi == L->val[K_KIND]) {
            if (L->kind)
                val = Py_NewRef(L->kind->name_obj);
            else if (L->nodes[vi].flags & S_LAZY)
                val = build(L, vi);
            else
                val = make_cached(str_ptr(L, &L->nodes[vi]), L->nodes[vi].u.s.len, L->nodes[vi].flags & S_ASCII);
        } else
            val = build(L, vi);
        if (!val) {
            Py_DECREF(key);
            goto fail;
        }
        int rc = PyDict_SetItem(d, key, val);
        Py_DECREF(key);
        if (hash_out && vi == L->val[K_HASH])
            *hash_out = Py_NewRef(val);
        Py_DECREF(val);
        if (rc < 0)
            goto fail;
        k = L->nodes[vi].next;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* Recursion is bounded by the parser's MAX_DEPTH. */
static PyObject *build(const Line *L, uint32_t ni)
{
    const Node *n = &L->nodes[ni];
    switch (n->type) {
    case T_NULL:
        Py_RETURN_NONE;
    case T_TRUE:
        Py_RETURN_TRUE;
    case T_FALSE:
        Py_RETURN_FALSE;
    case T_INT:
        return PyLong_FromLongLong(n->u.n.i);
    case T_DBL:
        return PyFloat_FromDouble(L->dbls[n->u.slot].v);
    case T_STR:
        if (n->flags & S_LAZY)
            return make_lazy(L, n);
        return make_str(str_ptr(L, n), n->u.s.len, n->flags & S_ASCII);
    case T_ARR: {
        PyObject *list = PyList_New(n->u.c.count);
        if (!list)
            return NULL;
        uint32_t c = n->u.c.first;
        for (uint32_t i = 0; i < n->u.c.count; i++) {
            PyObject *item = build(L, c);
            if (!item) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
            c = L->nodes[c].next;
        }
        return list;
    }
    case T_OBJ:
        return build_object(L, ni, NULL);
    }
    PyErr_SetString(PyExc_SystemError, "ract_cli._core: corrupt parse tree");
    return NULL;
}

/* Whether a payload key is one the kind keeps (keep) or documents (!keep). */
static int key_wanted(const KindEntry *k, int keep, const uint8_t *kp, uint32_t kl)
{
    uint32_t n = keep ? k->nkeep : k->nfields;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t len = keep ? k->keep[j].len : k->fields[j].nlen;
        const char *s = keep ? k->keep[j].s : k->fields[j].name;
        if (len == kl && memcmp(s, kp, kl) == 0)
            return 1;
    }
    return 0;
}

/* The payload with only the kind's keep keys (keep), or only its documented fields (!keep: all
 * its Python validator reads, the fields and the invariants over them, so a huge undocumented
 * value is never built just to be judged), in the line's order. */
static PyObject *build_kept(const Line *L, const KindEntry *k, int keep)
{
    const Node *n = &L->nodes[L->val[K_PAYLOAD]];
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    uint32_t ki = n->u.c.first;
    for (uint32_t i = 0; i < n->u.c.count; i++) {
        const Node *kn = &L->nodes[ki];
        const uint8_t *kp = str_ptr(L, kn);
        uint32_t kl = kn->u.s.len;
        do {
            if ((kn->flags & S_LAZY) || !key_wanted(k, keep, kp, kl))
                break; /* (a key left undecoded is longer than any name) */
            PyObject *key = make_cached(kp, kl, kn->flags & S_ASCII), *val = key ? build(L, kn->next) : NULL;
            int rc = val ? PyDict_SetItem(d, key, val) : -1;
            Py_XDECREF(key);
            Py_XDECREF(val);
            if (rc < 0) {
                Py_DECREF(d);
                return NULL;
            }
        } while (0);
        ki = L->nodes[kn->next].next;
    }
    return d;
}

/* 1: the payload passes the kind's Python validator (it returned an empty list), 0: not, -1: error. */
static int python_verdict(const Line *L, PyObject *payload)
{
    PyObject *r = PyObject_CallOneArg(L->kind->validator, payload);
    if (!r)
        return -1;
    int bad = PyObject_IsTrue(r);
    Py_DECREF(r);
    return bad < 0 ? -1 : !bad;
}

/* Strings that repeat from line to line within one call (run_id, step_id, the previous hash). */
typedef struct {
    PyObject *run, *step, *hash;
} Repeats;

static void repeats_clear(Repeats *R)
{
    Py_CLEAR(R->run);
    Py_CLEAR(R->step);
    Py_CLEAR(R->hash);
}

/* A 32/64-hex value as str: the cached one when the bytes repeat. */
static PyObject *hex_str(const Line *L, uint32_t vi, PyObject **cache)
{
    const Node *n = &L->nodes[vi];
    if (n->type == T_NULL)
        Py_RETURN_NONE;
    const uint8_t *p = str_ptr(L, n);
    size_t len = n->u.s.len;
    if (cache && *cache && (size_t)PyUnicode_GET_LENGTH(*cache) == len &&
        memcmp(PyUnicode_1BYTE_DATA(*cache), p, len) == 0)
        return Py_NewRef(*cache);
    PyObject *s = make_str(p, len, 1);
    if (s && cache)
        Py_XSETREF(*cache, Py_NewRef(s));
    return s;
}

/* What one line becomes for the caller:
 *   full=0: (id, run_id, step_id, parent_id, timestamp_ns, kind, prev_hash, hash, payload or None)
 *   full=1: (event, hash)
 * None for every line that is not ST_OK (or whose payload the Python validator rejects);
 * NULL with an exception. R: NULL in the module-level functions (no Verifier). */
static PyObject *line_result(Line *L, int full, Repeats *R);

/* (a, b), taking both references: released on failure too. NULL: exception set. */
static PyObject *pair_of(PyObject *a, PyObject *b)
{
    PyObject *t = PyTuple_Pack(2, a, b);
    Py_DECREF(a);
    Py_DECREF(b);
    return t;
}

/* A long line's compact result when it is valid but for its hash: (compact, computed hash), so that
 * HASH_MISMATCH is worded without the Python path building the line (issue 15, item 8). Else what
 * line_result(L, 0) gives. */
static PyObject *compact_result(Line *L, Repeats *R)
{
    if (L->status != ST_HASH_BAD)
        return line_result(L, 0, R);
    L->status = ST_OK; /* (line_result builds what an accepted line carries) */
    PyObject *compact = line_result(L, 0, R);
    L->status = ST_HASH_BAD;
    if (!compact || compact == Py_None)
        return compact;
    PyObject *computed = PyUnicode_FromStringAndSize((const char *)L->computed, 64);
    if (!computed) {
        Py_DECREF(compact);
        return NULL;
    }
    return pair_of(compact, computed);
}

static PyObject *line_result(Line *L, int full, Repeats *R)
{
    if (L->status == ST_NOMEM)
        return PyErr_NoMemory();
    if (L->status == ST_INTERNAL) {
        PyErr_SetString(PyExc_SystemError, "ract_cli._core: canonical form outgrew its bound");
        return NULL;
    }
    if (L->status != ST_OK)
        Py_RETURN_NONE;
    if (full) {
        PyObject *hash = NULL;
        PyObject *event = build_object(L, 0, &hash);
        if (!event) {
            Py_XDECREF(hash);
            return NULL;
        }
        if (!hash) {
            Py_DECREF(event);
            PyErr_SetString(PyExc_SystemError, "ract_cli._core: hash value not built");
            return NULL;
        }
        if (L->need_py) {
            PyObject *payload = PyDict_GetItemWithError(event, g_env_keys[K_PAYLOAD]); /* borrowed */
            int ok = payload ? python_verdict(L, payload) : -1;
            if (ok <= 0) {
                Py_DECREF(event);
                Py_DECREF(hash);
                if (ok < 0 && !PyErr_Occurred())
                    PyErr_SetString(PyExc_SystemError, "ract_cli._core: payload not built");
                return ok < 0 ? NULL : Py_NewRef(Py_None);
            }
        }
        return pair_of(event, hash);
    }
    PyObject *payload = NULL;
    if (L->kind->want == 1 || L->need_py) {
        payload = L->kind->want == 1 ? build_object(L, L->val[K_PAYLOAD], NULL) : build_kept(L, L->kind, 0);
        if (!payload)
            return NULL;
        if (L->need_py) {
            int ok = python_verdict(L, payload);
            if (ok <= 0) {
                Py_DECREF(payload);
                return ok < 0 ? NULL : Py_NewRef(Py_None);
            }
        }
        if (L->kind->want != 1)
            Py_CLEAR(payload);
    }
    if (L->kind->want == 2 && !(payload = build_kept(L, L->kind, 1)))
        return NULL;
    PyObject *t = PyTuple_New(9);
    if (!t) {
        Py_XDECREF(payload);
        return NULL;
    }
    PyObject *item;
    /* prev_hash first: it is the previous line's hash, whose object R->hash still holds */
#define SET(i, expr)                                                                                                   \
    do {                                                                                                               \
        if (!(item = (expr))) {                                                                                        \
            Py_DECREF(t);                                                                                              \
            Py_XDECREF(payload);                                                                                       \
            return NULL;                                                                                               \
        }                                                                                                              \
        PyTuple_SET_ITEM(t, i, item);                                                                                  \
    } while (0)
    SET(6, hex_str(L, L->val[K_PREV], &R->hash));
    SET(7, hex_str(L, L->val[K_HASH], &R->hash));
    SET(0, hex_str(L, L->val[K_ID], NULL));
    SET(1, hex_str(L, L->val[K_RUN_ID], &R->run));
    SET(2, hex_str(L, L->val[K_STEP_ID], &R->step));
    SET(3, hex_str(L, L->val[K_PARENT_ID], NULL));
    SET(4, PyLong_FromLongLong(L->nodes[L->val[K_TS]].u.n.i));
    SET(5, Py_NewRef(L->kind->name_obj));
#undef SET
    if (payload) {
        int tracked = PyObject_GC_IsTracked(payload); /* a dict of scalars is not */
        PyTuple_SET_ITEM(t, 8, payload);
        if (!tracked)
            PyObject_GC_UnTrack(t);
    } else {
        PyTuple_SET_ITEM(t, 8, Py_NewRef(Py_None));
        PyObject_GC_UnTrack(t); /* strings, an int and None: no cycle can pass through it */
    }
    return t;
}

/* A line given as a buffer other than bytes (a memoryview of a long line, never copied): it must be
 * read-only and contiguous, so that nothing can change it while it is read. 0 ok, -1 exception set. */
static int view_arg(PyObject *arg, Py_buffer *view)
{
    if (!PyObject_CheckBuffer(arg)) {
        PyErr_Format(PyExc_TypeError, "expected bytes, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(arg, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (!view->readonly || view->len < 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "expected bytes or a read-only view of bytes");
        return -1;
    }
    return 0;
}

static int bytes_arg(PyObject *arg, const uint8_t **p, size_t *n)
{
    if (!PyBytes_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected bytes, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    *p = (const uint8_t *)PyBytes_AS_STRING(arg);
    *n = (size_t)PyBytes_GET_SIZE(arg);
    return 0;
}

/* --- across lines: the id set and the chain cursor ----------------------------- */

/* An exact set of event ids (16 bytes each) in bounded memory: 64 open-addressing
 * tables, each grown on its own (no whole-table doubling spike; 1.5x past 4,096 slots), about 21-32
 * bytes per id past 200,000 ids; the all-zero id, which marks an empty slot, is kept apart. The same
 * design as read/idset.py's compact form.
 *
 * An id's place comes from a keyed hash (id_hash): the ids are the log's to choose, and
 * under a fixed hash a crafted log puts every id in one slot, so that each insert steps
 * over all of them (a million such ids: hours). The hash's top 6 bits pick the part, the
 * rest the slot. */
#define ID_PARTS 64
#define ID_PART_DOUBLING 4096

typedef struct {
    uint64_t hi, lo; /* both 0: empty */
} IdSlot;

typedef struct {
    IdSlot *slot; /* an id's two halves side by side: one cache miss per probe, not two */
    size_t size, used;
} IdPart;

typedef struct {
    PyObject_HEAD IdPart part[ID_PARTS];
    int zero;
    Py_ssize_t count;
    unsigned long long probes; /* occupied slots inserts stepped over (a test's measure of clustering) */
} IdSet;

/* Simple tabulation (Zobrist; Patrascu and Thorup, "The power of simple tabulation hashing"): the XOR
 * of one random 64-bit word per byte of the id, from 16 tables of 256. Linear probing on it takes O(1)
 * expected probes for any set of ids, which a linear (multiply-shift) hash does not give: ids in an
 * arithmetic progression cluster (they did, in tests/test_id_sets.py, for a third of the keys). It costs
 * 16 loads from a 16 KB table of 32-bit words (64-bit words, 32 KB, crowded L1 out: 7 % of a verify, as
 * SipHash of the 16 bytes cost; 16 KB: 1 %). The tables are filled at import from CPython's hash secret
 * (random per process unless PYTHONHASHSEED fixes it). */
static uint32_t id_table[16][256]; /* (32-bit words: 16 KB, half of L1; 26 bits of slot are plenty) */

static void id_key_init(void)
{
    static const char label[] = "ract.idset.tabulation";
    uint64_t x = (uint64_t)_Py_HashBytes(label, sizeof label - 1); /* SipHash under the process's secret */
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 256; j++) { /* splitmix64 from that seed */
            uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
            id_table[i][j] = (uint32_t)(z ^ (z >> 31));
        }
}

static inline uint32_t id_hash(uint64_t hi, uint64_t lo)
{
    uint32_t h = 0;
    for (int i = 0; i < 8; i++)
        h ^= id_table[i][(hi >> (8 * i)) & 0xFF] ^ id_table[8 + i][(lo >> (8 * i)) & 0xFF];
    return h;
}

/* The part: the hash's top 6 bits; the slot: its other 26 scaled onto the part's size (a multiply, not
 * a division). */
#define ID_PART(h) ((h) >> 26)
static inline size_t id_home(const IdPart *p, uint32_t h)
{
    return (size_t)(((uint64_t)(h & 0x3FFFFFF) * p->size) >> 26);
}

static int idpart_insert(IdPart *p, uint64_t hi, uint64_t lo, uint32_t h, unsigned long long *probes)
{
    size_t i = id_home(p, h);
    while (p->slot[i].hi | p->slot[i].lo) {
        if (p->slot[i].hi == hi && p->slot[i].lo == lo)
            return 0;
        ++*probes;
        if (++i == p->size)
            i = 0;
    }
    p->slot[i].hi = hi;
    p->slot[i].lo = lo;
    p->used++;
    return 1;
}

static int idpart_grow(IdPart *p)
{
    /* doubled while small (each id moves about once, not twice; all 64 parts at 4,096 slots are 4 MB),
     * then by half (no spike: a part is 1/64 of the set) */
    IdPart n = {NULL, !p->size ? 64 : p->size < ID_PART_DOUBLING ? p->size * 2 : p->size / 2 * 3, 0};
    unsigned long long probes = 0; /* (moving ids is not counted) */
    if (n.size > SIZE_MAX / sizeof(IdSlot))
        return -1;
    n.slot = calloc(n.size, sizeof(IdSlot)); /* calloc: untouched pages cost nothing */
    if (!n.slot)
        return -1;
    for (size_t i = 0; i < p->size; i++)
        if (p->slot[i].hi | p->slot[i].lo)
            idpart_insert(&n, p->slot[i].hi, p->slot[i].lo, id_hash(p->slot[i].hi, p->slot[i].lo), &probes);
    free(p->slot);
    *p = n;
    return 0;
}

/* 1 added, 0 already present, -1 out of memory. h: id_hash(hi, lo). */
static int idset_add_hashed(IdSet *S, uint64_t hi, uint64_t lo, uint32_t h)
{
    if (!hi && !lo) {
        int seen = S->zero;
        S->zero = 1;
        S->count += !seen;
        return !seen;
    }
    IdPart *p = &S->part[ID_PART(h)];
    if (p->used * 4 >= p->size * 3 && idpart_grow(p) < 0)
        return -1;
    int r = idpart_insert(p, hi, lo, h, &S->probes);
    S->count += r;
    return r;
}

static int idset_add(IdSet *S, uint64_t hi, uint64_t lo) { return idset_add_hashed(S, hi, lo, id_hash(hi, lo)); }

static int idset_has(const IdSet *S, uint64_t hi, uint64_t lo)
{
    if (!hi && !lo)
        return S->zero;
    uint32_t h = id_hash(hi, lo);
    const IdPart *p = &S->part[ID_PART(h)];
    if (!p->size)
        return 0;
    size_t i = id_home(p, h);
    while (p->slot[i].hi | p->slot[i].lo) {
        if (p->slot[i].hi == hi && p->slot[i].lo == lo)
            return 1;
        if (++i == p->size)
            i = 0;
    }
    return 0;
}

/* 32 lowercase hex digits -> 128 bits. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Eight lowercase hex digits (checked before) -> their 32-bit value, all at once (SWAR): each byte
 * becomes its nibble, then pairs of nibbles, pairs of bytes and pairs of 16-bit halves are joined. */
static inline uint32_t hex8(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    v = (v & 0x0F0F0F0F0F0F0F0FULL) + 9 * ((v >> 6) & 0x0101010101010101ULL); /* byte k: digit k's nibble */
    v = ((v << 4) | (v >> 8)) & 0x00FF00FF00FF00FFULL;                       /* byte 2k: digits 2k, 2k+1 */
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFFULL;
    v = (v | (v >> 16)) & 0xFFFFFFFFULL; /* the four bytes in the line's order */
    return __builtin_bswap32((uint32_t)v);
}

static inline uint64_t hex16(const uint8_t *p) { return (uint64_t)hex8(p) << 32 | hex8(p + 8); }
#else
static inline uint64_t hex16(const uint8_t *p)
{
    /* lowercase hex digits only (checked before): '0'-'9' are 0x30-0x39, 'a'-'f' 0x61-0x66 */
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t c = p[i];
        v = v << 4 | (uint64_t)((c & 0xF) + 9 * (c >> 6));
    }
    return v;
}
#endif

static void hex128(const uint8_t *p, uint64_t *hi, uint64_t *lo)
{
    *hi = hex16(p);
    *lo = hex16(p + 16);
}

static int id_arg(PyObject *arg, uint64_t *hi, uint64_t *lo)
{
    if (!PyUnicode_Check(arg) || PyUnicode_KIND(arg) != PyUnicode_1BYTE_KIND || PyUnicode_GET_LENGTH(arg) != 32 ||
        !all_hex(PyUnicode_1BYTE_DATA(arg), 32)) {
        PyErr_SetString(PyExc_ValueError, "an event id is 32 lowercase hex characters");
        return -1;
    }
    hex128(PyUnicode_1BYTE_DATA(arg), hi, lo);
    return 0;
}

static void idset_dealloc(IdSet *S)
{
    for (int i = 0; i < ID_PARTS; i++)
        free(S->part[i].slot);
    Py_TYPE(S)->tp_free((PyObject *)S);
}

static PyObject *idset_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":IdSet", names))
        return NULL;
    IdSet *S = (IdSet *)type->tp_alloc(type, 0); /* zeroed */
    return (PyObject *)S;
}

static PyObject *idset_add_py(IdSet *S, PyObject *arg)
{
    uint64_t hi, lo;
    if (id_arg(arg, &hi, &lo) < 0)
        return NULL;
    int r = idset_add(S, hi, lo);
    if (r < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(r);
}

static int idset_contains(IdSet *S, PyObject *arg)
{
    uint64_t hi, lo;
    if (id_arg(arg, &hi, &lo) < 0) {
        PyErr_Clear();
        return 0;
    }
    return idset_has(S, hi, lo);
}

static Py_ssize_t idset_len(IdSet *S) { return S->count; }

static PyObject *idset_get_probes(IdSet *S, void *Py_UNUSED(c)) { return PyLong_FromUnsignedLongLong(S->probes); }

static PyGetSetDef idset_getset[] = {
    {"probes", (getter)idset_get_probes, NULL, "occupied slots that inserts stepped over (clustering)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef idset_methods[] = {
    {"add", (PyCFunction)idset_add_py, METH_O, "add(event_id: str) -> bool: False when the id was already present."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods idset_as_sequence = {
    .sq_length = (lenfunc)idset_len,
    .sq_contains = (objobjproc)idset_contains,
};

static PyTypeObject IdSetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ract_cli._core.IdSet",
    .tp_basicsize = sizeof(IdSet),
    .tp_dealloc = (destructor)idset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IdSet(): an exact set of event ids (32 lowercase hex) in bounded memory (~21-32 bytes per id).",
    .tp_new = idset_new,
    .tp_methods = idset_methods,
    .tp_getset = idset_getset,
    .tp_as_sequence = &idset_as_sequence,
};

/* The state ChainState.feed's fast path reads and writes, so a batch can take the
 * clean lines that link on in C (Verifier.check_lines(bodies, chain=...)). */
typedef struct {
    PyObject_HEAD uint8_t expected_prev[64], run_id[32];
    uint8_t has_prev, has_run, has_prev_ts, has_last_ts, has_first_ts;
    int64_t prev_ts, last_ts, first_ts; /* first_ts: set when C took the file's first event */
    long long events;
    IdSet *ids;
} Chain;

static void chain_dealloc(Chain *C)
{
    Py_XDECREF(C->ids);
    Py_TYPE(C)->tp_free((PyObject *)C);
}

static PyObject *chain_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"ids", NULL};
    PyObject *ids = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O!", names, &IdSetType, &ids))
        return NULL;
    Chain *C = (Chain *)type->tp_alloc(type, 0); /* zeroed: nothing known yet */
    if (!C)
        return NULL;
    C->ids = ids ? (IdSet *)Py_NewRef(ids) : (IdSet *)PyObject_CallNoArgs((PyObject *)&IdSetType);
    if (!C->ids) {
        Py_DECREF(C);
        return NULL;
    }
    return (PyObject *)C;
}

static PyObject *hex_get(const uint8_t *p, size_t n, int has)
{
    if (!has)
        Py_RETURN_NONE;
    return make_str(p, n, 1);
}

static int hex_set(PyObject *v, uint8_t *p, size_t n, uint8_t *has, const char *what)
{
    if (!v || v == Py_None) {
        *has = 0;
        return 0;
    }
    if (!PyUnicode_Check(v) || PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND || (size_t)PyUnicode_GET_LENGTH(v) != n ||
        !all_hex(PyUnicode_1BYTE_DATA(v), n)) {
        /* A value no valid line can equal: nothing links to it, nothing is taken in C. */
        PyErr_Format(PyExc_ValueError, "Chain.%s is %zu lowercase hex characters or None", what, n);
        return -1;
    }
    memcpy(p, PyUnicode_1BYTE_DATA(v), n);
    *has = 1;
    return 0;
}

static int ts_set(PyObject *v, int64_t *ts, uint8_t *has)
{
    if (!v || v == Py_None) {
        *has = 0;
        return 0;
    }
    if (!PyLong_CheckExact(v)) {
        PyErr_SetString(PyExc_TypeError, "a timestamp is an int or None");
        return -1;
    }
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "a timestamp is a 64-bit integer");
        return -1;
    }
    *ts = x;
    *has = 1;
    return 0;
}

static PyObject *chain_get_expected_prev(Chain *C, void *Py_UNUSED(c))
{
    return hex_get(C->expected_prev, 64, C->has_prev);
}
static int chain_set_expected_prev(Chain *C, PyObject *v, void *Py_UNUSED(c))
{
    return hex_set(v, C->expected_prev, 64, &C->has_prev, "expected_prev");
}
static PyObject *chain_get_run_id(Chain *C, void *Py_UNUSED(c)) { return hex_get(C->run_id, 32, C->has_run); }
static int chain_set_run_id(Chain *C, PyObject *v, void *Py_UNUSED(c))
{
    return hex_set(v, C->run_id, 32, &C->has_run, "run_id");
}
static PyObject *chain_get_prev_ts(Chain *C, void *Py_UNUSED(c))
{
    return C->has_prev_ts ? PyLong_FromLongLong(C->prev_ts) : Py_NewRef(Py_None);
}
static int chain_set_prev_ts(Chain *C, PyObject *v, void *Py_UNUSED(c)) { return ts_set(v, &C->prev_ts, &C->has_prev_ts); }
static PyObject *chain_get_last_ts(Chain *C, void *Py_UNUSED(c))
{
    return C->has_last_ts ? PyLong_FromLongLong(C->last_ts) : Py_NewRef(Py_None);
}
static int chain_set_last_ts(Chain *C, PyObject *v, void *Py_UNUSED(c)) { return ts_set(v, &C->last_ts, &C->has_last_ts); }
static PyObject *chain_get_first_ts(Chain *C, void *Py_UNUSED(c))
{
    return C->has_first_ts ? PyLong_FromLongLong(C->first_ts) : Py_NewRef(Py_None);
}
static PyObject *chain_get_events(Chain *C, void *Py_UNUSED(c)) { return PyLong_FromLongLong(C->events); }
static int chain_set_events(Chain *C, PyObject *v, void *Py_UNUSED(c))
{
    long long x = v ? PyLong_AsLongLong(v) : -1;
    if (x == -1 && (!v || PyErr_Occurred())) {
        if (!v)
            PyErr_SetString(PyExc_TypeError, "Chain.events cannot be deleted");
        return -1;
    }
    C->events = x;
    return 0;
}
static PyObject *chain_get_ids(Chain *C, void *Py_UNUSED(c)) { return Py_NewRef(C->ids); }

static PyGetSetDef chain_getset[] = {
    {"expected_prev", (getter)chain_get_expected_prev, (setter)chain_set_expected_prev,
     "the hash the next event must link to (ChainState.expected_prev), or None", NULL},
    {"run_id", (getter)chain_get_run_id, (setter)chain_set_run_id, "the log's run_id, or None (not known yet)", NULL},
    {"prev_ts", (getter)chain_get_prev_ts, (setter)chain_set_prev_ts, "the previous event's timestamp_ns, or None",
     NULL},
    {"last_ts", (getter)chain_get_last_ts, (setter)chain_set_last_ts, "the largest timestamp_ns so far, or None",
     NULL},
    {"events", (getter)chain_get_events, (setter)chain_set_events, "events counted", NULL},
    {"first_ts", (getter)chain_get_first_ts, NULL, "the first event's timestamp_ns when C took it, else None", NULL},
    {"ids", (getter)chain_get_ids, NULL, "the IdSet of every event id seen (the caller adds the ids it judges)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ChainType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ract_cli._core.Chain",
    .tp_basicsize = sizeof(Chain),
    .tp_dealloc = (destructor)chain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Chain(*, ids=None): what ChainState.feed's fast path keeps across lines, for "
              "Verifier.check_lines(bodies, chain=...).",
    .tp_new = chain_new,
    .tp_getset = chain_getset,
};

/* Whether the file's first event is next: no event yet, so no run_id and no clock. ChainState takes it
 * with no finding when it links on to expected_prev (genesis, for a file read from its start) and
 * makes its run_id the file's. */
static inline int chain_first(const Chain *C) { return !C->events && !C->has_run && !C->has_prev_ts; }

/* Whether an accepted line takes ChainState.feed's fast path: it links to the expected
 * hash, has the log's run_id, and its clock does not go back (or it is the first event). */
static int chain_links(const Chain *C, const Line *L)
{
    if (!C->has_prev)
        return 0;
    const uint8_t *prev = str_ptr(L, &L->nodes[L->val[K_PREV]]), *run = str_ptr(L, &L->nodes[L->val[K_RUN_ID]]);
    if (memcmp(prev, C->expected_prev, 64) != 0)
        return 0;
    if (chain_first(C))
        return 1;
    return C->has_run && C->has_prev_ts && memcmp(run, C->run_id, 32) == 0 &&
           L->nodes[L->val[K_TS]].u.n.i >= C->prev_ts;
}

/* --- batches ---------------------------------------------------------------- */

/* One line with the GIL held (not worth releasing it for one line). */
static PyObject *run_one(PyObject *arg, const Verifier *V, int full)
{
    const uint8_t *p;
    size_t n;
    Py_buffer view = {0};
    if (PyBytes_Check(arg)) {
        p = (const uint8_t *)PyBytes_AS_STRING(arg);
        n = (size_t)PyBytes_GET_SIZE(arg);
    } else if (view_arg(arg, &view) < 0) {
        return NULL;
    } else {
        p = (const uint8_t *)view.buf;
        n = (size_t)view.len;
    }
    Workspace *ws = ws_get(); /* from the pool: a re-entrant call (GC, finalizer) gets its own */
    if (!ws) {
        if (view.obj)
            PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Line *L = &ws->lines[0];
    L->src = p;
    L->len = n;
    stage_one(L, &ws->sha, V);
    PyObject *res = NULL;
    if (L->status == ST_NEED_DBL) {
        if (stage_doubles(L) < 0)
            goto done;
        if (L->status == ST_READY)
            finish_check(L, &ws->sha);
    }
    Repeats R = {NULL, NULL, NULL};
    res = line_result(L, full, &R);
    repeats_clear(&R);
done:
    ws_put(ws);
    if (view.obj)
        PyBuffer_Release(&view); /* after ws_put: the workspace no longer points into it */
    return res;
}

/* An ST_OK line whose payload needs the kind's Python validator: run it now (ST_BAD when
 * it rejects the payload). 0 ok, -1 exception set. */
static int resolve_python(Line *L)
{
    if (L->status != ST_OK || !L->need_py)
        return 0;
    PyObject *payload = build_kept(L, L->kind, 0); /* what the validator reads, no more */
    if (!payload)
        return -1;
    int ok = python_verdict(L, payload);
    Py_DECREF(payload);
    if (ok < 0)
        return -1;
    L->need_py = 0;
    if (!ok)
        L->status = ST_BAD;
    return 0;
}

/* Chain mode: take the line in C when it is an accepted event on ChainState.feed's fast
 * path with an id not seen before. 1 taken, 0 not, -1 exception set. */
static int chain_take(Chain *C, Line *L)
{
    if (L->status != ST_OK || !chain_links(C, L))
        return 0;
    int r = idset_add_hashed(C->ids, L->id_hi, L->id_lo, L->id_h);
    if (r < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (r == 0)
        return 0; /* DUPLICATE_ID: the caller's to report (the id stays as it was) */
    int64_t ts = L->nodes[L->val[K_TS]].u.n.i;
    if (chain_first(C)) {
        memcpy(C->run_id, str_ptr(L, &L->nodes[L->val[K_RUN_ID]]), 32);
        C->has_run = C->has_prev_ts = C->has_first_ts = 1;
        C->first_ts = ts;
    }
    C->prev_ts = ts;
    if (!C->has_last_ts || ts > C->last_ts) {
        C->last_ts = ts;
        C->has_last_ts = 1;
    }
    C->events++;
    memcpy(C->expected_prev, str_ptr(L, &L->nodes[L->val[K_HASH]]), 64);
    return 1;
}

/* Before a chunk's lines are taken: ask for the id-set slot each accepted line's id will probe first. Taking
 * is serial, and with 100k ids the set outgrows the caches: each insert waited for its slot's line (~7 % of
 * a verify); asked for together, the waits overlap. (A part that grows before its line is taken only makes
 * the hint stale.) always_inline: GCC deletes the calls of a static function that only prefetches. */
static inline __attribute__((always_inline)) void prefetch_ids(const Chain *C, const Workspace *w, int k)
{
    const IdSet *S = C->ids;
    for (int j = 0; j < k; j++) {
        const Line *L = &w->lines[j];
        if (L->status != ST_OK)
            continue;
        const IdPart *p = &S->part[ID_PART(L->id_h)];
        if (p->size)
            __builtin_prefetch(&p->slot[id_home(p, L->id_h)], 0, 3);
    }
}

/* Lines 0..k-1 of the workspace (src and len set): parse, checks, canonical form and hash with
 * the GIL released, then (GIL held) the doubles that need dtoa and the rest of their checks.
 * 0 ok, -1 exception set. */
/* The GIL-free part of staging lines 0..k-1 (no Python object is touched: any thread may run it).
 * Returns whether a line waits for a double's dtoa (ST_NEED_DBL: stage_dbl, GIL held). */
static int stage_free(Workspace *ws, int k, const Verifier *V)
{
    int dbl = 0;
    for (int j = 0; j < k; j++) {
        stage_one(&ws->lines[j], &ws->sha, V);
        dbl |= ws->lines[j].status == ST_NEED_DBL;
    }
    return dbl;
}

/* The lines stage_free left waiting for a double (GIL held). 0 ok, -1 exception set. */
static int stage_dbl(Workspace *ws, int k)
{
    for (int j = 0; j < k; j++)
        if (ws->lines[j].status == ST_NEED_DBL && stage_doubles(&ws->lines[j]) < 0)
            return -1;
    Py_BEGIN_ALLOW_THREADS
    for (int j = 0; j < k; j++)
        if (ws->lines[j].status == ST_READY)
            finish_check(&ws->lines[j], &ws->sha);
    Py_END_ALLOW_THREADS
    return 0;
}

static int stage_chunk(Workspace *ws, int k, const Verifier *V)
{
    int dbl;
    Py_BEGIN_ALLOW_THREADS
    dbl = stage_free(ws, k, V);
    Py_END_ALLOW_THREADS
    return dbl ? stage_dbl(ws, k) : 0;
}

/* A batch: the loop over the lines runs here, in chunks whose parse, checks, canonical
 * form and hash run with the GIL released. chain (Verifier mode only): see
 * Verifier.check_lines; *taken counts the lines taken in C. */
static PyObject *run_lines(PyObject *arg, const Verifier *V, int full, Chain *chain, Py_ssize_t *taken,
                           Py_ssize_t compact_from)
{
    int taking = chain != NULL;
    /* A tuple of our own: the caller's list may change while the GIL is released. */
    PyObject *items = PySequence_Tuple(arg);
    if (!items)
        return NULL;
    Py_ssize_t total = PyTuple_GET_SIZE(items);
    PyObject *result = PyList_New(total);
    Repeats R = {NULL, NULL, NULL};
    Workspace *ws = NULL;
    Py_buffer views[CHUNK_LINES]; /* the chunk's lines given as read-only views (not bytes) */
    int nviews = 0;
    if (!result)
        goto fail;
    ws = ws_get();
    if (!ws) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < total;) {
        int k = 0;
        size_t bytes = 0;
        while (nviews)
            PyBuffer_Release(&views[--nviews]); /* the previous chunk is done with them */
        while (i + k < total && k < CHUNK_LINES && bytes < CHUNK_BYTES) {
            Line *L = &ws->lines[k];
            PyObject *item = PyTuple_GET_ITEM(items, i + k);
            if (PyBytes_Check(item)) {
                L->src = (const uint8_t *)PyBytes_AS_STRING(item);
                L->len = (size_t)PyBytes_GET_SIZE(item);
            } else {
                if (view_arg(item, &views[nviews]) < 0)
                    goto fail;
                L->src = (const uint8_t *)views[nviews].buf;
                L->len = (size_t)views[nviews].len;
                nviews++;
            }
            bytes += L->len;
            k++;
        }
        if (stage_chunk(ws, k, V) < 0)
            goto fail;
        for (int j = 0; j < k; j++) {
            Line *L = &ws->lines[j];
            PyObject *r;
            if (taking) {
                int t = resolve_python(L) < 0 ? -1 : chain_take(chain, L);
                if (t < 0)
                    goto fail;
                if (t) {
                    (*taken)++;
                    r = L->kind->want ? line_result(L, 0, &R) : Py_NewRef(Py_None);
                } else {
                    taking = 0; /* from here on the caller decides, line by line */
                    r = compact_from < 0 || L->len < (size_t)compact_from ? line_result(L, 1, &R)
                                                                           : compact_result(L, &R);
                }
            } else
                r = chain && compact_from >= 0 && L->len >= (size_t)compact_from ? compact_result(L, &R)
                                                                                  : line_result(L, chain ? 1 : full, &R);
            if (!r)
                goto fail;
            PyList_SET_ITEM(result, i + j, r);
        }
        i += k;
    }
    repeats_clear(&R);
    ws_put(ws);
    while (nviews)
        PyBuffer_Release(&views[--nviews]);
    Py_DECREF(items);
    return result;
fail:
    repeats_clear(&R);
    if (ws)
        ws_put(ws);
    while (nviews)
        PyBuffer_Release(&views[--nviews]);
    Py_XDECREF(result);
    Py_DECREF(items);
    return NULL;
}

/* --- module functions (no kind or payload checks) ------------------------- */

PyDoc_STRVAR(check_line_doc,
             "check_line(body: bytes) -> tuple[dict, str] | None\n\n"
             "(event, hash) when the line (without its ending) is one valid envelope whose\n"
             "stored hash matches its canonical hash; None in every other case (the\n"
             "pure-Python path then decides and words the findings). Kinds and payloads are\n"
             "not checked: see compile_kinds for a Verifier that checks them too.");

static PyObject *core_check_line(PyObject *Py_UNUSED(mod), PyObject *arg) { return run_one(arg, NULL, 1); }

PyDoc_STRVAR(check_lines_doc,
             "check_lines(bodies: Sequence[bytes]) -> list[tuple[dict, str] | None]\n\n"
             "check_line over a batch; parsing, canonical form and hashing run with the GIL released.");

static PyObject *core_check_lines(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    return run_lines(arg, NULL, 1, NULL, NULL, -1);
}

/* One JSON value (not an envelope) from L->src: parsed under the line rules, its doubles converted.
 * 1 ok, 0 refused, -1 exception set. */
static int parse_value(Line *L)
{
    L->envelope = 0;
    int r = parse(L);
    if (r < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (r > 0 && L->dn && !fast_doubles(L))
        r = convert_doubles(L);
    return r;
}

/* A workspace holding the one JSON value of a bytes argument, read by parse_value (*r: its answer);
 * NULL with an exception set (and no workspace held). */
static Workspace *value_arg(PyObject *arg, int *r)
{
    const uint8_t *p;
    size_t n;
    if (bytes_arg(arg, &p, &n) < 0)
        return NULL;
    Workspace *ws = ws_get();
    if (!ws) {
        PyErr_NoMemory();
        return NULL;
    }
    ws->lines[0].src = p;
    ws->lines[0].len = n;
    *r = parse_value(&ws->lines[0]);
    return ws;
}

PyDoc_STRVAR(canonical_doc,
             "canonical(body: bytes) -> bytes | None\n\n"
             "The canonical bytes (SPEC §2.3) of one JSON value under the strict line rules\n"
             "(SPEC §2.1); None when the value is not acceptable.");

static PyObject *core_canonical(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    int r;
    Workspace *ws = value_arg(arg, &r);
    if (!ws)
        return NULL;
    Line *L = &ws->lines[0];
    PyObject *res = NULL;
    if (r < 0)
        goto done;
    if (r == 0)
        goto none;
    r = to_canonical(L, NONE);
    if (r < 0) {
        if (r == -1)
            PyErr_NoMemory();
        else
            PyErr_SetString(PyExc_SystemError, "ract_cli._core: canonical form outgrew its bound");
        goto done;
    }
    res = PyBytes_FromStringAndSize((const char *)L->out, (Py_ssize_t)L->on);
    goto done;
none:
    res = Py_NewRef(Py_None);
done:
    ws_put(ws);
    return res;
}

/* --- Verifier ------------------------------------------------------------------ */

static void field_free(FieldDef *f)
{
    free(f->name);
    for (uint32_t i = 0; i < f->nenum; i++)
        free(f->enums[i].s);
    free(f->enums);
}

static void verifier_dealloc(Verifier *V)
{
    for (uint32_t i = 0; i < V->nkinds; i++) {
        KindEntry *k = &V->kinds[i];
        free(k->name);
        for (uint32_t j = 0; j < k->nfields; j++)
            field_free(&k->fields[j]);
        free(k->fields);
        for (uint32_t j = 0; j < k->nkeep; j++)
            free(k->keep[j].s);
        free(k->keep);
        Py_XDECREF(k->validator);
        Py_XDECREF(k->name_obj);
    }
    free(V->kinds);
    free(V->table);
    Py_TYPE(V)->tp_free((PyObject *)V);
}

static int verifier_args(PyObject *args, PyObject *kw, PyObject **body, int *full)
{
    static char *names[] = {"", "full", NULL};
    *full = 0;
    return PyArg_ParseTupleAndKeywords(args, kw, "O|$p", names, body, full);
}

PyDoc_STRVAR(v_check_line_doc,
             "check_line(body: bytes, *, full: bool = False) -> tuple | None\n\n"
             "None unless the line (without its ending) has no finding at all under the\n"
             "Verifier's schema version: exactly what analyze_line(body, schema_version)\n"
             "reports as problems == [] (the pure-Python path then decides and words the\n"
             "findings). Otherwise, full=False:\n"
             "  (id, run_id, step_id, parent_id, timestamp_ns, kind, prev_hash, hash, payload)\n"
             "with payload the dict for the Verifier's payload_kinds, else None; full=True:\n"
             "  (event, hash) with the whole event dict, as the module-level check_line.");

static PyObject *verifier_check_line(Verifier *V, PyObject *args, PyObject *kw)
{
    PyObject *body;
    int full;
    if (!verifier_args(args, kw, &body, &full))
        return NULL;
    return run_one(body, V, full);
}

PyDoc_STRVAR(v_check_lines_doc,
             "check_lines(bodies: Sequence[bytes], *, full: bool = False, chain: Chain | None = None,\n"
             "            compact_from: int = -1)\n\n"
             "check_line over a batch -> list[tuple | None]: the parse, checks, canonical form and\n"
             "hash run in C with the GIL released (threads may check parts of one file in parallel).\n\n"
             "chain=Chain(...) -> (taken, results): the leading lines that take ChainState.feed's\n"
             "fast path (accepted, prev_hash == chain.expected_prev, run_id == chain.run_id,\n"
             "chain.prev_ts is not None and timestamp_ns >= it, an id not in chain.ids) are taken\n"
             "in C, which updates the chain as that path does (ids, prev_ts, last_ts, events,\n"
             "expected_prev = the line's hash); so is the file's first event (no events, run_id and\n"
             "prev_ts None) that links on, whose run_id and timestamp_ns (first_ts) then are the\n"
             "chain's, as ChainState makes them. results[i] for i < taken is the compact tuple for a\n"
             "payload kind, else None; from the first line not taken on, results[i] is what\n"
             "check_line(body, full=True) gives, and the caller judges those lines itself; a line of\n"
             "at least compact_from bytes (when given) comes back as the compact tuple instead (no\n"
             "payload built beyond what a taken line carries: the bounded memory of a huge line), or,\n"
             "when its one fault is its stored hash (HASH_MISMATCH), as (compact tuple, canonical hash).");

static PyObject *verifier_check_lines(Verifier *V, PyObject *args, PyObject *kw)
{
    static char *names[] = {"", "full", "chain", "compact_from", NULL};
    PyObject *bodies, *chain = Py_None;
    int full = 0;
    Py_ssize_t compact_from = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pOn", names, &bodies, &full, &chain, &compact_from))
        return NULL;
    if (chain == Py_None)
        return run_lines(bodies, V, full, NULL, NULL, -1);
    if (!PyObject_TypeCheck(chain, &ChainType)) {
        PyErr_SetString(PyExc_TypeError, "chain must be a ract_cli._core.Chain");
        return NULL;
    }
    if (full) {
        PyErr_SetString(PyExc_ValueError, "chain mode returns its own shapes: full=True does not apply");
        return NULL;
    }
    Py_ssize_t taken = 0;
    PyObject *results = run_lines(bodies, V, 0, (Chain *)chain, &taken, compact_from);
    if (!results)
        return NULL;
    return Py_BuildValue("(nN)", taken, results);
}

/* The next line of s[p, n) that chain mode may take: its body length, or -1 when it is not one
 * (no newline, empty, not '{' first, a body longer than max_line). A "\r" before the "\n" stays in
 * the body: JSON whitespace after the object, as reading line by line judges it (SPEC §2.1). */
static inline Py_ssize_t clean_line(const uint8_t *s, size_t n, size_t p, size_t max_line)
{
    const uint8_t *nl = p < n ? memchr(s + p, '\n', n - p) : NULL;
    if (!nl)
        return -1;
    size_t len = (size_t)(nl - (s + p));
    if (len == 0 || len > max_line || s[p] != '{')
        return -1;
    return (Py_ssize_t)len;
}

/* One entry of check_block's found list: (index, offset, compact). NULL: exception set. */
static PyObject *found_item(Py_ssize_t index, size_t offset, PyObject *compact)
{
    PyObject *t = PyTuple_New(3), *a = t ? PyLong_FromSsize_t(index) : NULL, *b = a ? PyLong_FromSize_t(offset) : NULL;
    if (!b) {
        Py_XDECREF(a);
        Py_XDECREF(t);
        Py_DECREF(compact);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    PyTuple_SET_ITEM(t, 2, compact);
    return t;
}

/* An open check_block has taken whose compact result is built only at the end of the call, unless a
 * close pairs with it in C first: its place in found (None until then) and its line. */
typedef struct {
    Py_ssize_t at, index; /* index in found; the line's index from start */
    size_t pos, len;      /* the line's body in the block */
    int paired;
    int item;   /* (a Fold) a step open the report itemizes */
    int64_t ts; /* (a Fold) its timestamp_ns */
} Deferred;

/* The opens check_block has taken in this call and may still pair in C: an open-addressing set of
 * (id, kind, its Deferred), and every Deferred of the call. A generation stamp empties the set in
 * O(1) (a slot of an older one is free), so a hostile log of alternating opens and unpaired closes
 * stays linear. */
typedef struct {
    uint64_t hi, lo;
    const KindEntry *kind; /* NULL: paired (a tombstone: lookups probe past it) */
    Py_ssize_t at;         /* index in Pendings.d */
    uint32_t gen;
} Pending;

typedef struct {
    Pending *e;
    size_t cap, used; /* used: slots of the current generation, tombstones too */
    uint32_t gen;
    Deferred *d;
    size_t dn, dcap;
} Pendings;

/* Record a deferred open. 0 ok, -1 out of memory. */
static int deferred_add(Pendings *P, Py_ssize_t at, Py_ssize_t index, size_t pos, size_t len)
{
    if (P->dn == P->dcap) {
        size_t cap = P->dcap ? P->dcap * 2 : 64;
        Deferred *grown = cap > SIZE_MAX / sizeof(Deferred) ? NULL : realloc(P->d, cap * sizeof(Deferred));
        if (!grown)
            return -1;
        P->d = grown;
        P->dcap = cap;
    }
    P->d[P->dn++] = (Deferred){at, index, pos, len, 0, 0, 0};
    return 0;
}

/* (keyed, as the IdSet: the ids are the log's to choose) */
static inline size_t pending_slot(uint64_t hi, uint64_t lo, size_t cap) { return (size_t)(id_hash(hi, lo) & (cap - 1)); }

/* 0 ok, -1 out of memory. */
static int pending_add(Pendings *P, uint64_t hi, uint64_t lo, const KindEntry *kind, Py_ssize_t at)
{
    if ((P->used + 1) * 2 > P->cap) {
        Pendings n = {NULL, P->cap ? P->cap * 2 : 64, 0, 1, P->d, P->dn, P->dcap};
        if (n.cap > SIZE_MAX / sizeof(Pending) || !(n.e = calloc(n.cap, sizeof(Pending))))
            return -1;
        for (size_t i = 0; i < P->cap; i++) {
            const Pending *o = &P->e[i];
            if (o->gen != P->gen || !o->kind)
                continue;
            size_t j = pending_slot(o->hi, o->lo, n.cap);
            while (n.e[j].gen == n.gen)
                j = (j + 1) & (n.cap - 1);
            n.e[j] = *o;
            n.e[j].gen = n.gen;
            n.used++;
        }
        free(P->e);
        *P = n;
    }
    size_t j = pending_slot(hi, lo, P->cap);
    while (P->e[j].gen == P->gen)
        j = (j + 1) & (P->cap - 1);
    P->e[j] = (Pending){hi, lo, kind, at, P->gen};
    P->used++;
    return 0;
}

/* The pending open with this id, or NULL. */
static Pending *pending_find(Pendings *P, uint64_t hi, uint64_t lo)
{
    if (!P->cap)
        return NULL;
    for (size_t j = pending_slot(hi, lo, P->cap); P->e[j].gen == P->gen; j = (j + 1) & (P->cap - 1))
        if (P->e[j].kind && P->e[j].hi == hi && P->e[j].lo == lo)
            return &P->e[j];
    return NULL;
}

static void pending_clear(Pendings *P)
{
    P->used = 0;
    if (++P->gen == 0) { /* (wrapped: every slot's stamp is older than 1 again) */
        if (P->cap)
            memset(P->e, 0, P->cap * sizeof(Pending));
        P->gen = 1;
    }
}

/* Whether the payload says "synthesized": true. */
static int synthesized(const Line *L)
{
    const Node *n = &L->nodes[L->val[K_PAYLOAD]];
    uint32_t ki = n->u.c.first;
    for (uint32_t i = 0; i < n->u.c.count; i++) {
        const Node *kn = &L->nodes[ki];
        if (!(kn->flags & S_LAZY) && kn->u.s.len == 11 && memcmp(str_ptr(L, kn), "synthesized", 11) == 0)
            return L->nodes[kn->next].type == T_TRUE;
        ki = L->nodes[kn->next].next;
    }
    return 0;
}

/* A taken close that check_block pairs in C: SPEC §4's rule 2 (its parent_id names an open of its
 * open kind) with an open taken earlier in this call, when rule 1 cannot apply (not synthesized)
 * and nothing handed to Python since that open could have closed it. The open's entry, or NULL. */
static Pending *paired_in_c(Pendings *P, const Line *L)
{
    const Node *parent = &L->nodes[L->val[K_PARENT_ID]];
    if (!L->kind->pair_open || parent->type != T_STR || synthesized(L))
        return NULL;
    uint64_t hi, lo;
    hex128(str_ptr(L, parent), &hi, &lo);
    Pending *o = pending_find(P, hi, lo);
    return o && o->kind == L->kind->pair_open ? o : NULL;
}

/* The compact results of the deferred opens no close paired in C, in their places in found: each
 * line is checked again (it was valid: the same verdict) to build it. 0 ok, -1 exception set. */
static int build_deferred(Pendings *P, PyObject *found, const uint8_t *s, Workspace *ws, const Verifier *V,
                          Repeats *R)
{
    for (size_t i = 0; i < P->dn; i++) {
        const Deferred *d = &P->d[i];
        if (d->paired)
            continue;
        Line *L = &ws->lines[0];
        L->src = s + d->pos;
        L->len = d->len;
        if (stage_chunk(ws, 1, V) < 0 || resolve_python(L) < 0)
            return -1;
        if (L->status != ST_OK) {
            PyErr_SetString(PyExc_SystemError, "ract_cli._core: a line taken in C is not valid on its second check");
            return -1;
        }
        PyObject *r = line_result(L, 0, R), *item = r ? found_item(d->index, d->pos, r) : NULL;
        if (!item || PyList_SetItem(found, d->at, item) < 0)
            return -1;
    }
    return 0;
}

/* found without the entries paired in C (None). NULL: exception set (found is released). */
static PyObject *without_paired(PyObject *found, Py_ssize_t paired)
{
    if (!paired)
        return found;
    Py_ssize_t n = PyList_GET_SIZE(found);
    PyObject *kept = PyList_New(n - paired);
    if (kept) {
        for (Py_ssize_t i = 0, j = 0; i < n; i++) {
            PyObject *item = PyList_GET_ITEM(found, i);
            if (item != Py_None)
                PyList_SET_ITEM(kept, j++, Py_NewRef(item));
        }
    }
    Py_DECREF(found);
    return kept;
}



/* --- the projection's fold (project; issue 14) ----------------------------------------------
 *
 * project folds every event into its report. In Python that costs ~3 us an event on top of reading
 * it, five times a verify's whole cost; with a Fold, check_block folds the events itself, as groups:
 * the events of one kind whose payload agrees on a few fields (the key: a tool's name, a predicate's
 * id...) are counted together, with what the report keeps of each (a latency sample, a sum), a copy of
 * the group's first line and, where the report shows the latest, of its last. Python applies each
 * group to the report with the code that folds one event (project/fold.py) after every call, so a
 * group holds lines of one call only, and the report's tables meet their keys in the log's order.
 * Kinds the fold leaves to Python (FA_PY) are handed out whole, as a wanted kind's are; after a kind
 * whose handler reads what groups fold (FA_STOP: a run's close reads the predicates) the call stops,
 * so Python applies the groups before it. What C cannot fold exactly (a key of a type it does not
 * compare, a close repair wrote, a kind it has no rule for) makes it give up: the caller projects the
 * log again without a fold. */
enum { FA_NONE, FA_COUNT, FA_GROUP, FA_PY, FA_STOP };           /* a kind's action */
enum { FV_NONE, FV_INT_NONNEG, FV_NUM_NONNEG, FV_INT_POS_SUM }; /* what a group keeps of a payload value */
enum { FSTEP_NONE, FSTEP_OPEN, FSTEP_CLOSE };                   /* a step's open or close (itemized, timed) */
#define FOLD_KEYS 3
/* A call pauses (Python applies the groups) once they number Fold(groups=) or hold FOLD_HELD bytes
 * (keys, copied lines, samples): memory stays bounded whatever the log. */
#define FOLD_HELD (4u << 20)

typedef struct {
    uint8_t action, value, step, last, nkeys;
    uint8_t regrouped; /* left to Python (FA_PY), grouped since Fold.regroup: no longer handed out */
    size_t recent; /* the kind's last group: its index + 1 (0: none); a log repeats keys in runs */
    char *keys[FOLD_KEYS]; /* payload fields whose values make the key */
    uint32_t klen[FOLD_KEYS];
    char *vfield; /* the payload field of value */
    uint32_t vlen;
    char *bfield, *bvalue; /* a bit of the key: whether bfield's value is the string bvalue */
    uint32_t blen, bvlen;
} FoldKind;

typedef struct {
    uint8_t *p;
    size_t n, cap;
} Buf;

typedef struct {
    uint32_t kind;
    Py_hash_t hash;
    Buf key, first, last; /* first, last: copies of the group's first and last line (last: FoldKind.last) */
    int64_t count, sum;
    Py_ssize_t last_line;
    Buf ints, nums; /* int64 / double samples, native order (array('q') / array('d') in Python) */
} Group;

typedef struct {
    PyObject_HEAD uint32_t nkinds;
    FoldKind *fk;       /* by the Verifier's kind index */
    PyObject *verifier; /* whose kind indexes these are */
    int64_t *counts;    /* events per kind */
    Group *g;
    size_t ng, gcap;
    size_t *slot; /* open addressing: a group's index + 1, 0 free */
    size_t scap;
    Buf kb;          /* the key being built */
    Buf durations;   /* int64: each step close paired in C, its time since its open */
    PyObject *records; /* the steps itemized: ("o", line, id, step_id) and ("c", open's line, line, kind,
                          outcome, reason, duration) */
    Py_ssize_t max_items, items, line_base;
    size_t max_groups, held; /* held: the bytes the groups hold */
    int paused;          /* the last call stopped after a line it took (FA_STOP, a bound reached, gave up) */
    const char *gave_up; /* why C cannot fold this log, or NULL */
} Fold;

/* Room for n more bytes. 0 ok, -1 out of memory. */
static int buf_grow(Buf *b, size_t n)
{
    if (n > SIZE_MAX / 2 - b->n)
        return -1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n)
        cap *= 2;
    uint8_t *grown = realloc(b->p, cap);
    if (!grown)
        return -1;
    b->p = grown;
    b->cap = cap;
    return 0;
}

/* 0 ok, -1 out of memory. */
static inline int buf_put(Buf *b, const void *p, size_t n)
{
    if (n > b->cap - b->n && buf_grow(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}

static void buf_free(Buf *b)
{
    free(b->p);
    *b = (Buf){NULL, 0, 0};
}

static void fold_give_up(Fold *F, const char *why)
{
    if (!F->gave_up)
        F->gave_up = why;
    F->paused = 1;
}

/* The payload's member named name (keys are never lazy), or NULL. */
static const Node *payload_get(const Line *L, const char *name, uint32_t nlen)
{
    const Node *n = &L->nodes[L->val[K_PAYLOAD]];
    if (n->type != T_OBJ)
        return NULL;
    uint32_t ki = n->u.c.first;
    for (uint32_t i = 0; i < n->u.c.count; i++) {
        const Node *kn = &L->nodes[ki];
        if (!(kn->flags & S_LAZY) && kn->u.s.len == nlen && memcmp(str_ptr(L, kn), name, nlen) == 0)
            return &L->nodes[kn->next];
        ki = L->nodes[kn->next].next;
    }
    return NULL;
}

/* One value of a key, tagged (equal values give equal bytes, and only they): 0 ok, 1 a value C does
 * not compare (a number, an object or array, a lazy string), -1 out of memory. */
static int key_value(Buf *kb, const Line *L, const Node *v)
{
    uint8_t tag;
    if (!v)
        tag = 'a';
    else if (v->type == T_NULL)
        tag = 'n';
    else if (v->type == T_TRUE)
        tag = 't';
    else if (v->type == T_FALSE)
        tag = 'f';
    else if (v->type == T_STR && !(v->flags & S_LAZY))
        tag = 's';
    else
        return 1;
    if (buf_put(kb, &tag, 1) < 0)
        return -1;
    if (tag == 's') {
        uint32_t n = v->u.s.len;
        if (buf_put(kb, &n, sizeof n) < 0 || buf_put(kb, str_ptr(L, v), n) < 0)
            return -1;
    }
    return 0;
}

/* The group of the key in F->kb (made when new; its first line copied from L). NULL: out of memory. */
static Group *group_of(Fold *F, uint32_t kind, const Line *L)
{
    size_t recent = F->fk[kind].recent;
    if (recent) {
        Group *g = &F->g[recent - 1];
        if (g->key.n == F->kb.n && memcmp(g->key.p, F->kb.p, F->kb.n) == 0)
            return g;
    }
    if ((F->ng + 1) * 2 > F->scap) {
        size_t cap = F->scap ? F->scap * 2 : 64;
        size_t *slot = calloc(cap, sizeof *slot);
        if (!slot)
            return NULL;
        for (size_t i = 0; i < F->ng; i++) {
            size_t j = (size_t)F->g[i].hash & (cap - 1);
            while (slot[j])
                j = (j + 1) & (cap - 1);
            slot[j] = i + 1;
        }
        free(F->slot);
        F->slot = slot;
        F->scap = cap;
    }
    /* SipHash under the process's secret: the keys are the log's to choose */
    Py_hash_t h = _Py_HashBytes(F->kb.p, (Py_ssize_t)F->kb.n);
    size_t j = (size_t)h & (F->scap - 1);
    for (; F->slot[j]; j = (j + 1) & (F->scap - 1)) {
        Group *g = &F->g[F->slot[j] - 1];
        if (g->hash == h && g->key.n == F->kb.n && memcmp(g->key.p, F->kb.p, F->kb.n) == 0) {
            F->fk[kind].recent = F->slot[j];
            return g;
        }
    }
    if (F->ng == F->gcap) {
        size_t cap = F->gcap ? F->gcap * 2 : 64;
        Group *grown = cap > SIZE_MAX / sizeof(Group) ? NULL : realloc(F->g, cap * sizeof(Group));
        if (!grown)
            return NULL;
        F->g = grown;
        F->gcap = cap;
    }
    Group *g = &F->g[F->ng];
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->hash = h;
    if (buf_put(&g->key, F->kb.p, F->kb.n) < 0 || buf_put(&g->first, L->src, L->len) < 0) {
        buf_free(&g->key);
        buf_free(&g->first);
        return NULL;
    }
    F->slot[j] = F->fk[kind].recent = ++F->ng;
    F->held += g->key.n + g->first.n;
    return g;
}

static void groups_clear(Fold *F)
{
    for (size_t i = 0; i < F->ng; i++) {
        Group *g = &F->g[i];
        buf_free(&g->key);
        buf_free(&g->first);
        buf_free(&g->last);
        buf_free(&g->ints);
        buf_free(&g->nums);
    }
    F->ng = 0;
    F->held = 0;
    if (F->slot)
        memset(F->slot, 0, F->scap * sizeof *F->slot);
    for (uint32_t i = 0; F->fk && i < F->nkinds; i++)
        F->fk[i].recent = 0;
}

/* A payload member's value, built (None when absent). */
static PyObject *payload_value(const Line *L, const char *name, uint32_t nlen)
{
    const Node *v = payload_get(L, name, nlen);
    return v ? build(L, (uint32_t)(v - L->nodes)) : Py_NewRef(Py_None);
}

/* A step's open or close (GIL held). item: set for an open the report itemizes. 0 ok, -1 exception set. */
static int fold_step(Fold *F, const FoldKind *k, const Line *L, Py_ssize_t line, const Deferred *open, int *item)
{
    PyObject *rec = NULL;
    if (k->step == FSTEP_OPEN) {
        if (F->items >= F->max_items)
            return 0;
        F->items++;
        *item = 1;
        rec = Py_BuildValue("(snNN)", "o", line, build(L, L->val[K_ID]), build(L, L->val[K_STEP_ID]));
    } else if (open) { /* a close paired in C; one paired in Python is Python's to time */
        int64_t d;
        if (__builtin_sub_overflow(L->nodes[L->val[K_TS]].u.n.i, open->ts, &d)) {
            fold_give_up(F, "a step's duration outside int64");
            return 0;
        }
        if (buf_put(&F->durations, &d, sizeof d) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        if (!open->item)
            return 0;
        rec = Py_BuildValue("(snnONNL)", "c", F->line_base + open->index, line, L->kind->name_obj,
                            payload_value(L, "outcome", 7), payload_value(L, "reason", 6), (long long)d);
    } else {
        return 0;
    }
    int rc = rec ? PyList_Append(F->records, rec) : -1;
    Py_XDECREF(rec);
    return rc;
}

/* Fold one line C took (GIL held): its kind's count, its group, its step. ki: its kind's index;
 * line: its number in the file; open: the open C paired it with (a close), or NULL; *item: set for
 * a step open the report itemizes. 0 ok, -1 exception set. */
static int fold_line(Fold *F, uint32_t ki, const Line *L, Py_ssize_t line, const Deferred *open, int *item)
{
    const FoldKind *k = &F->fk[ki];
    F->counts[ki]++;
    if (k->action == FA_COUNT || k->action == FA_PY)
        return 0;
    if (k->action == FA_STOP) {
        F->paused = 1;
        return 0;
    }
    if (k->action != FA_GROUP) {
        fold_give_up(F, "a kind the fold has no rule for");
        return 0;
    }
    if (L->kind->closes && synthesized(L)) {
        fold_give_up(F, "a close that repair wrote");
        return 0;
    }
    Buf *kb = &F->kb;
    kb->n = 0;
    if (buf_put(kb, &ki, sizeof ki) < 0)
        goto nomem;
    for (int i = 0; i < k->nkeys; i++) {
        int r = key_value(kb, L, payload_get(L, k->keys[i], k->klen[i]));
        if (r < 0)
            goto nomem;
        if (r > 0) {
            fold_give_up(F, "a key value C does not compare");
            return 0;
        }
    }
    if (k->bfield) {
        const Node *b = payload_get(L, k->bfield, k->blen);
        if (b && b->type == T_STR && (b->flags & S_LAZY)) {
            fold_give_up(F, "a key value C does not compare");
            return 0;
        }
        uint8_t bit = b && b->type == T_STR && b->u.s.len == k->bvlen && memcmp(str_ptr(L, b), k->bvalue, k->bvlen) == 0;
        if (buf_put(kb, &bit, 1) < 0)
            goto nomem;
    }
    /* the value kept: Python's as_int / as_num and the handler's bound, exactly */
    const Node *v = k->value ? payload_get(L, k->vfield, k->vlen) : NULL;
    int64_t iv = 0;
    double dv = 0;
    uint8_t valid = 0;
    if (v && v->type == T_INT) {
        iv = v->u.n.i;
        dv = (double)iv;
        valid = k->value == FV_INT_POS_SUM ? iv > 0 : iv >= 0;
    } else if (v && v->type == T_DBL && k->value == FV_NUM_NONNEG) {
        const Dbl *d = &L->dbls[v->u.slot];
        if (!d->done) {
            fold_give_up(F, "a number not converted");
            return 0;
        }
        dv = d->v + 0.0; /* -0.0 is kept as 0.0, as Python keeps it (tools.py): the sign of zero is no latency */
        valid = dv >= 0;
    }
    if (k->value == FV_NUM_NONNEG && buf_put(kb, &valid, 1) < 0) /* (the handler names the tool only then) */
        goto nomem;
    Group *g = group_of(F, ki, L);
    if (!g)
        goto nomem;
    g->count++;
    if (k->last) {
        F->held = F->held + L->len - g->last.n; /* (held counts the copy it replaces) */
        g->last.n = 0;
        if (buf_put(&g->last, L->src, L->len) < 0)
            goto nomem;
        g->last_line = line;
    }
    if (valid && k->value == FV_INT_NONNEG && buf_put(&g->ints, &iv, sizeof iv) < 0)
        goto nomem;
    if (valid && k->value == FV_NUM_NONNEG && buf_put(&g->nums, &dv, sizeof dv) < 0)
        goto nomem;
    if (valid && (k->value == FV_INT_NONNEG || k->value == FV_NUM_NONNEG))
        F->held += 8;
    if (valid && k->value == FV_INT_POS_SUM && __builtin_add_overflow(g->sum, iv, &g->sum))
        g->sum = INT64_MAX; /* saturating, as project.tallies.saturating_sum */
    if (F->ng >= F->max_groups || F->held >= FOLD_HELD)
        F->paused = 1;
    return k->step ? fold_step(F, k, L, line, open, item) : 0;
nomem:
    PyErr_NoMemory();
    return -1;
}

static PyTypeObject FoldType;

/* What check_block keeps across the lines it takes. */
typedef struct {
    Chain *C;
    Fold *F; /* NULL: no fold */
    PyObject *found;
    Repeats R;
    Pendings P;
    size_t pos;                     /* the next line's offset in the block */
    Py_ssize_t taken, last, paired; /* see check_block; paired: entries of found left None */
} Taking;

/* Take a staged line: 1 taken, 2 taken and the call stops after it (its Fold paused), 0 not (C stops
 * before it), -1 exception set. */
static int take_line(Taking *T, Line *L)
{
    int t = resolve_python(L) < 0 ? -1 : chain_take(T->C, L);
    if (t <= 0)
        return t;
    Pendings *P = &T->P;
    Pending *open = L->kind->want ? paired_in_c(P, L) : NULL;
    Fold *F = T->F;
    uint32_t ki = F ? (uint32_t)(L->kind - ((Verifier *)F->verifier)->kinds) : 0; /* the kind's index */
    int item = 0;
    if (F && fold_line(F, ki, L, F->line_base + T->taken, open ? &P->d[open->at] : NULL, &item) < 0)
        return -1;
    if (open) {
        P->d[open->at].paired = 1; /* (its place in found stays None; the close was never put there) */
        open->kind = NULL;
        T->paired++;
    } else if (L->kind->pairable) { /* built at the end, unless a close pairs with it first */
        if (PyList_Append(T->found, Py_None) < 0)
            return -1;
        if (deferred_add(P, PyList_GET_SIZE(T->found) - 1, T->taken, T->pos, L->len) < 0 ||
            pending_add(P, L->id_hi, L->id_lo, L->kind, (Py_ssize_t)P->dn - 1) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        P->d[P->dn - 1].item = item;
        P->d[P->dn - 1].ts = L->nodes[L->val[K_TS]].u.n.i;
    } else if (L->kind->want && !(F && F->fk[ki].regrouped)) {
        /* (a kind left to Python is compiled as wanted; once regrouped, its lines are grouped instead) */
        PyObject *r = line_result(L, L->kind->whole, &T->R), *item = r ? found_item(T->taken, T->pos, r) : NULL;
        int rc = item ? PyList_Append(T->found, item) : -1;
        Py_XDECREF(item);
        if (rc < 0)
            return -1;
        if (L->kind->closes)
            pending_clear(P); /* Python sees it first: it may close any pending open */
    }
    T->last = (Py_ssize_t)T->pos;
    T->pos += L->len + 1;
    T->taken++;
    return F && F->paused ? 2 : 1; /* 2: taken, and the call stops after it */
}

/* The lines of a chunk: clean lines from *p on, at most `chunk` of them and CHUNK_BYTES. Their bodies
 * go to at/len (room for `chunk`) and *p past them; returns how many, and sets *stop when the line
 * after them is not clean (or there is none). */
static int frame_chunk(const uint8_t *s, size_t n, size_t *p, size_t max_line, int chunk, size_t *at, size_t *len,
                       int *stop)
{
    int k = 0;
    size_t bytes = 0, q = *p;
    Py_ssize_t l;
    while (k < chunk && bytes < CHUNK_BYTES && (l = clean_line(s, n, q, max_line)) >= 0) {
        at[k] = q;
        len[k] = (size_t)l;
        k++;
        bytes += (size_t)l + 1;
        q += (size_t)l + 1;
    }
    *stop = k < chunk && bytes < CHUNK_BYTES;
    *p = q;
    return k;
}

static void fill_lines(Workspace *ws, const uint8_t *s, const size_t *at, const size_t *len, int k)
{
    for (int j = 0; j < k; j++) {
        ws->lines[j].src = s + at[j];
        ws->lines[j].len = len[j];
    }
}

/* --- a second thread for check_block (threads=2) --------------------------------------------- */

/* Work sharing: chunks are framed in order, under a mutex, by whichever thread claims the next one,
 * and staged (parse, checks, canonical form and hash: no Python object touched) by the thread that
 * claimed it. The helper only stages, into the workspaces of four slots; the calling thread takes
 * every chunk, in order. When the chunk it is to take is not claimed yet it claims and stages it
 * itself (in a workspace of its own); when the helper holds it, it stages chunks ahead into free
 * slots meanwhile, and when none is free it spins for about a chunk's time, then stages the helper's
 * chunk again itself (the helper's copy is dropped once done): a helper the scheduler took off its
 * core (the other core busy) never holds the calling thread for more than that. Taking stays
 * sequential, so the answer is the one-thread answer. (A helper of fixed chunks, every other one,
 * left the calling thread half the staging on top of all the taking: at best ~1.45 x one thread,
 * and slower than one thread while the other core was busy.) */
#define SHARE_SLOTS 4
#define READ_AHEAD_MAX ((Py_ssize_t)64 << 20) /* bytes check_block's read_ahead reads at most */

typedef struct {
    const uint8_t *s;
    size_t n, max_line;
    const Verifier *V;
    Workspace *ws[SHARE_SLOTS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu: where framing goes on, the next chunk's line budget and number */
    size_t p;
    int chunk;
    long next;
    /* written under mu, read under it or atomically (acquire) by a spinner */
    long end;   /* how many chunks framing found (-1: not known yet) */
    long taken; /* the chunks the calling thread has taken */
    int quit;
    int sleeping;     /* threads waiting on cv */
    long helper_done; /* chunks the helper published (atomic): has it run since the calling thread last
                         staged one of its chunks again? */
    /* a slot holds chunk c (c % SHARE_SLOTS) from its claim (busy) until the claimer published it (ready)
     * and the calling thread took it; at, len and k are written under mu by the claimer, the workspace's
     * lines by the claimer before it sets ready (release), read by the calling thread once it sees ready
     * (acquire) */
    size_t at[SHARE_SLOTS][CHUNK_LINES], len[SHARE_SLOTS][CHUNK_LINES];
    int k[SHARE_SLOTS];
    int busy[SHARE_SLOTS];   /* claimed and not yet published (its claimer still writes its workspace) */
    int dbl[SHARE_SLOTS];    /* a line of it waits for a double (stage_dbl, GIL held) */
    long ready[SHARE_SLOTS]; /* the chunk staged in the slot; -1: none */
    /* read_ahead: the helper's first job, the caller's next read of the file (written by the helper
     * alone, read by the calling thread after the join) */
    int ahead_fd;
    long long ahead_at;
    char *ahead_buf; /* NULL: nothing to read (set under mu: a started helper is asked once it runs) */
    size_t ahead_size;
    int ahead_taken; /* (under mu) the helper took the request */
    int exited;      /* (under mu) the helper ended */
    int ahead_ok;    /* all ahead_size bytes were read */
} Share;

/* pread until size bytes are in buf: 1, or 0 at an error (EINTR too: the caller reads them again, and a
 * signal is then handled where Python handles it) or at the end of the file before size bytes. */
static int read_fully(int fd, char *buf, size_t size, long long at)
{
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + got, size - got, (off_t)(at + (long long)got));
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

/* A handover usually comes within microseconds: spin that long before sleeping on the condition
 * variable (a futex sleep and wake-up cost ~10 us each, a fifth of a chunk's staging) or, in the
 * calling thread, before staging the helper's chunk again. 1: *v == want. (make fuzz-native's
 * ThreadSanitizer build sets 0: every wait then sleeps or stages again, the paths a busy machine takes.) */
#ifndef SHARE_SPINS
#define SHARE_SPINS 4000
#endif
static int spin_until(const long *v, long want)
{
    for (int i = 0; i < SHARE_SPINS; i++) {
        if (__atomic_load_n(v, __ATOMIC_ACQUIRE) == want)
            return 1;
#ifdef __SSE2__
        _mm_pause();
#endif
    }
    return 0;
}

/* Frame the next chunk (mu held) into at/len: its number, or -1 when framing ended (then end is
 * known). *k: its lines. */
static long frame_next_locked(Share *H, size_t *at, size_t *len, int *k)
{
    if (H->end >= 0)
        return -1;
    long c = H->next;
    int stop;
    *k = frame_chunk(H->s, H->n, &H->p, H->max_line, H->chunk, at, len, &stop);
    if (*k == 0) {
        __atomic_store_n(&H->end, c, __ATOMIC_RELEASE);
        return -1;
    }
    H->next = c + 1;
    if (stop)
        __atomic_store_n(&H->end, c + 1, __ATOMIC_RELEASE);
    if (H->chunk < CHUNK_LINES)
        H->chunk *= 2;
    return c;
}

/* Claim the next chunk into its slot (mu held). Its number, or -1 when there is none to claim now
 * (framing ended, the window of SHARE_SLOTS chunks past the last taken is full, or the slot's last
 * claimer has not published yet). */
static long claim_locked(Share *H)
{
    int slot = (int)(H->next % SHARE_SLOTS);
    if (H->quit || H->next >= H->taken + SHARE_SLOTS || H->busy[slot])
        return -1;
    long c = frame_next_locked(H, H->at[slot], H->len[slot], &H->k[slot]);
    if (c < 0)
        return -1;
    fill_lines(H->ws[slot], H->s, H->at[slot], H->len[slot], H->k[slot]);
    H->busy[slot] = 1;
    return c;
}

/* Stage claimed chunk c (no GIL, mu not held), then publish it (mu taken and released). */
static void stage_claimed(Share *H, long c)
{
    int slot = (int)(c % SHARE_SLOTS);
    int dbl = stage_free(H->ws[slot], H->k[slot], H->V);
    pthread_mutex_lock(&H->mu);
    H->dbl[slot] = dbl;
    H->busy[slot] = 0;
    __atomic_store_n(&H->ready[slot], c, __ATOMIC_RELEASE);
    if (H->sleeping)
        pthread_cond_broadcast(&H->cv);
    pthread_mutex_unlock(&H->mu);
}

static void *helper_main(void *arg)
{
    Share *H = arg;
    for (;;) {
        pthread_mutex_lock(&H->mu);
        if (H->ahead_buf && !H->ahead_taken) { /* first, while the calling thread frames and stages itself */
            H->ahead_taken = 1;
            pthread_mutex_unlock(&H->mu);
            H->ahead_ok = read_fully(H->ahead_fd, H->ahead_buf, H->ahead_size, H->ahead_at);
            continue;
        }
        long c = claim_locked(H);
        long taken = H->taken;
        int done = H->quit || H->end >= 0; /* nothing left to claim: the calling thread takes the rest */
        if (c < 0 && done) { /* (no read ahead waits: one is taken first, under this lock) */
            H->exited = 1;        /* (a started helper that ended is not taken over: it cannot read ahead) */
            pthread_mutex_unlock(&H->mu);
            return NULL;
        }
        pthread_mutex_unlock(&H->mu);
        if (c >= 0) {
            stage_claimed(H, c);
            __atomic_add_fetch(&H->helper_done, 1, __ATOMIC_RELAXED);
            continue;
        }
        /* the window is full (the calling thread is taking): spin, then sleep until a chunk is taken */
        if (spin_until(&H->taken, taken + 1))
            continue;
        pthread_mutex_lock(&H->mu);
        if (H->taken == taken && !H->quit && !(H->ahead_buf && !H->ahead_taken)) {
            H->sleeping++;
            pthread_cond_wait(&H->cv, &H->mu);
            H->sleeping--;
        }
        pthread_mutex_unlock(&H->mu);
    }
}

/* check_block's loop with a running helper; own: the calling thread's workspace. 0 ok, -1 exception set. */
static int take_shared(Taking *T, Share *H, Workspace *own)
{
    size_t at[CHUNK_LINES], len[CHUNK_LINES];
    long stalled = -1; /* helper_done when the calling thread last staged a chunk of the helper's again */
    for (long c = 0;; c++) {
        int slot = (int)(c % SHARE_SLOTS), k = 0;
        Workspace *w = NULL; /* the chunk's staged lines: its slot's, or own's */
        while (!w) {
            if (__atomic_load_n(&H->ready[slot], __ATOMIC_ACQUIRE) == c) {
                w = H->ws[slot];
                k = H->k[slot];
                if (H->dbl[slot] && stage_dbl(w, k) < 0)
                    return -1;
                break;
            }
            pthread_mutex_lock(&H->mu);
            long mine = -1, copy = -1;
            if (c == H->next) /* not claimed yet: framed and staged here */
                copy = frame_next_locked(H, at, len, &k);
            else if (__atomic_load_n(&H->ready[slot], __ATOMIC_RELAXED) != c) /* the helper holds it */
                mine = claim_locked(H);
            long end = H->end;
            pthread_mutex_unlock(&H->mu);
            if (copy < 0 && c == end)
                return 0; /* every chunk framed is taken */
            if (mine >= 0) { /* a chunk ahead, staged here rather than waiting */
                Py_BEGIN_ALLOW_THREADS
                stage_claimed(H, mine);
                Py_END_ALLOW_THREADS
                continue;
            }
            if (copy < 0) {
                /* no spin while the helper has published nothing since the last time it was too slow:
                 * it is off its core, and a spin for each of its chunks would cost more than the chunk */
                if (__atomic_load_n(&H->helper_done, __ATOMIC_RELAXED) != stalled && spin_until(&H->ready[slot], c))
                    continue;
                stalled = __atomic_load_n(&H->helper_done, __ATOMIC_RELAXED);
                pthread_mutex_lock(&H->mu); /* the helper is slow (off its core?): stage its chunk again */
                if (__atomic_load_n(&H->ready[slot], __ATOMIC_RELAXED) != c) {
                    k = H->k[slot];
                    memcpy(at, H->at[slot], (size_t)k * sizeof at[0]);
                    memcpy(len, H->len[slot], (size_t)k * sizeof len[0]);
                    copy = c;
                }
                pthread_mutex_unlock(&H->mu);
                if (copy < 0)
                    continue;
            }
            fill_lines(own, H->s, at, len, k);
            if (stage_chunk(own, k, H->V) < 0)
                return -1;
            w = own;
        }
        prefetch_ids(T->C, w, k);
        for (int j = 0; j < k; j++) {
            int t = take_line(T, &w->lines[j]);
            if (t != 1)
                return t < 0 ? -1 : 0; /* 0: not taken; 2: taken, and its Fold paused: the call stops */
        }
        pthread_mutex_lock(&H->mu);
        __atomic_store_n(&H->taken, c + 1, __ATOMIC_RELEASE); /* the slot is free for chunk c + SHARE_SLOTS */
        if (H->sleeping)                                       /* (once its claimer published, if own took it) */
            pthread_cond_broadcast(&H->cv);
        pthread_mutex_unlock(&H->mu);
    }
}

static void share_free(Share *H);

/* Have the helper read size bytes of fd at offset into the bytes object ahead, next (mu held, or no helper
 * running yet). */
static void ask_ahead(Share *H, PyObject *ahead, int fd, long long at, Py_ssize_t size)
{
    H->ahead_fd = fd;
    H->ahead_at = at;
    H->ahead_buf = PyBytes_AS_STRING(ahead);
    H->ahead_size = (size_t)size;
}

/* A Share over s[start:n] for a helper thread: its mutex, condition and the slots' workspaces (GIL held:
 * ws_get). NULL when any is not to be had: then one thread does it all. chunk: the first chunk's lines. */
static Share *share_new(const uint8_t *s, size_t n, size_t start, size_t max_line, const Verifier *V, int chunk)
{
    Share *H = calloc(1, sizeof(Share));
    if (!H)
        return NULL;
    H->s = s;
    H->n = n;
    H->max_line = max_line;
    H->V = V;
    H->p = start;
    H->chunk = chunk;
    H->end = -1;
    for (int i = 0; i < SHARE_SLOTS; i++)
        H->ready[i] = -1;
    if (pthread_mutex_init(&H->mu, NULL) != 0) {
        free(H);
        return NULL;
    }
    if (pthread_cond_init(&H->cv, NULL) != 0) {
        pthread_mutex_destroy(&H->mu);
        free(H);
        return NULL;
    }
    for (int i = 0; i < SHARE_SLOTS; i++)
        if (!(H->ws[i] = ws_get())) {
            share_free(H);
            return NULL;
        }
    return H;
}

/* Free a Share no thread runs in any more (GIL held: ws_put). */
static void share_free(Share *H)
{
    for (int i = 0; i < SHARE_SLOTS; i++)
        if (H->ws[i])
            ws_put(H->ws[i]);
    pthread_cond_destroy(&H->cv);
    pthread_mutex_destroy(&H->mu);
    free(H);
}

/* Stop the helper and wait for it to end (GIL held, released while waiting). */
static void share_stop(Share *H, pthread_t helper)
{
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&H->mu);
    __atomic_store_n(&H->quit, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&H->cv);
    pthread_mutex_unlock(&H->mu);
    pthread_join(helper, NULL);
    Py_END_ALLOW_THREADS
}

/* Verifier.start_block's answer: a helper thread already staging a block's first chunks (the next read's,
 * while Python handles what check_block answered on the read before), which check_block(started=) takes
 * over. Dropped unused, it stops its helper. */
typedef struct {
    PyObject_HEAD Share *H; /* NULL once a check_block took it over */
    pthread_t helper;
    PyObject *block, *verifier;
    Py_ssize_t start;
    pid_t pid; /* the process the helper runs in: a forked child has no such thread (and mu may be held) */
} Started;

static void started_dealloc(Started *St)
{
    if (St->H && St->pid == getpid()) {
        share_stop(St->H, St->helper);
        share_free(St->H);
    } /* (in a forked child there is no helper to stop or join: its Share is left as it is) */
    Py_XDECREF(St->block);
    Py_XDECREF(St->verifier);
    Py_TYPE(St)->tp_free((PyObject *)St);
}

static PyObject *started_get_start(Started *St, void *Py_UNUSED(c)) { return PyLong_FromSsize_t(St->start); }
static PyObject *started_get_block(Started *St, void *Py_UNUSED(c)) { return Py_NewRef(St->block); }
static PyObject *started_get_taken(Started *St, void *Py_UNUSED(c)) { return PyBool_FromLong(St->H == NULL); }

static PyGetSetDef started_getset[] = {
    {"block", (getter)started_get_block, NULL, "the bytes its helper frames", NULL},
    {"start", (getter)started_get_start, NULL, "where in them it began", NULL},
    {"taken", (getter)started_get_taken, NULL, "whether a check_block took it over", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StartedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ract_cli._core.Started",
    .tp_basicsize = sizeof(Started),
    .tp_dealloc = (destructor)started_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A helper thread staging a block's first chunks (Verifier.start_block) until check_block(started=) "
              "takes it over.",
    .tp_getset = started_getset,
};

PyDoc_STRVAR(v_start_block_doc,
             "start_block(block: bytes, start: int, *, max_line: int) -> Started | None\n\n"
             "A helper thread that starts on block's lines from byte start on now: it stages (parses, checks and\n"
             "hashes) its first chunks while the caller does other work, until check_block(block, start,\n"
             "threads=2, started=it, max_line= the same) takes it over (the answer is check_block's without it).\n"
             "None when no thread can be started.");

static PyObject *verifier_start_block(Verifier *V, PyObject *args, PyObject *kw)
{
    static char *names[] = {"", "", "max_line", NULL};
    PyObject *block;
    Py_ssize_t start, max_line = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!n|$n", names, &PyBytes_Type, &block, &start, &max_line))
        return NULL;
    size_t n = (size_t)PyBytes_GET_SIZE(block);
    if (max_line < 0 || start < 0 || (size_t)start > n) {
        PyErr_SetString(PyExc_ValueError, "start_block needs max_line >= 0 and 0 <= start <= len(block)");
        return NULL;
    }
    Started *St = (Started *)StartedType.tp_alloc(&StartedType, 0);
    if (!St)
        return NULL;
    St->block = Py_NewRef(block);
    St->verifier = Py_NewRef((PyObject *)V);
    St->start = start;
    St->pid = getpid();
    /* full chunks from the first: as many lines as the slots hold are staged ahead */
    Share *H = share_new((const uint8_t *)PyBytes_AS_STRING(block), n, (size_t)start, (size_t)max_line, V, CHUNK_LINES);
    if (H && pthread_create(&St->helper, NULL, helper_main, H) != 0) {
        share_free(H);
        H = NULL;
    }
    if (!H) {
        Py_DECREF(St);
        Py_RETURN_NONE;
    }
    St->H = H;
    return (PyObject *)St;
}

PyDoc_STRVAR(v_check_block_doc,
             "check_block(block: bytes, start: int, *, chain: Chain, max_line: int, threads: int = 1,\n"
             "            fold: Fold | None = None, first_line: int = 1, read_ahead: (fd, offset, size),\n"
             "            started: Started | None = None)\n"
             "    -> (stop, taken, last, found)\n\n"
             "Chain mode over the lines of block from byte start on, framed in C: each line is taken\n"
             "as check_lines(..., chain=) takes one, up to the first that is not taken or does not\n"
             "look clean (no newline, empty, not '{' first, \"\\r\\n\", a body over max_line bytes).\n"
             "stop: the offset of that line (len(block) when every line was taken); taken: the lines\n"
             "taken; last: the offset of the last line taken (-1: none); found: (index, offset, compact)\n"
             "for each taken line of a payload kind, index counting the lines from start. Chunks start\n"
             "at one line and double, so a stop just after a resume costs one line's check.\n"
             "A close of a kind in compile_kinds' pairs is paired in C, and neither it nor its open\n"
             "is in found, when its parent_id names an open of its open kind taken earlier in this\n"
             "call, it is not synthesized, and no close (compile_kinds' closes) was put in found in\n"
             "between (then HandleTracker.feed would pair them, and nothing between could touch the open).\n"
             "threads=2: a second thread shares the checking of chunks (the answer is the same; it\n"
             "costs a thread's start, worth it on a block of many lines).\n"
             "fold: every line taken is also folded into it (see Fold; taken in order by the calling thread), first_line being the\n"
             "number of the line at start; the call stops after a line when the fold pauses (Fold.paused).\n"
             "read_ahead=(fd, offset, size), with threads=2: the helper thread first reads size bytes of fd\n"
             "from offset (pread: fd's position is not moved), the caller's next read, while the calling\n"
             "thread checks; the answer then has a fifth item, those bytes, or None when they were not all\n"
             "read (no helper, an error, the end of the file): the caller reads them itself.\n"
             "started=: a helper start_block started on this block from start with this max_line, taken over\n"
             "(with threads=2; anything else is ignored and the call starts its own helper).");

static PyObject *verifier_check_block(Verifier *V, PyObject *args, PyObject *kw)
{
    static char *names[] = {"", "", "chain", "max_line", "threads", "fold", "first_line", "read_ahead", "started", NULL};
    PyObject *block, *chain = NULL, *fold = NULL, *read_ahead = NULL, *started_arg = NULL;
    Py_ssize_t start, max_line = -1, first_line = 1;
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!n|$O!niO!nO!O", names, &PyBytes_Type, &block, &start, &ChainType,
                                     &chain, &max_line, &threads, &FoldType, &fold, &first_line, &PyTuple_Type,
                                     &read_ahead, &started_arg))
        return NULL;
    if (started_arg == Py_None)
        started_arg = NULL;
    if (started_arg && !PyObject_TypeCheck(started_arg, &StartedType)) {
        PyErr_SetString(PyExc_TypeError, "check_block: started must be what start_block answered, or None");
        return NULL;
    }
    const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(block);
    size_t n = (size_t)PyBytes_GET_SIZE(block);
    if (!chain || max_line < 0 || start < 0 || (size_t)start > n || threads < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "check_block needs chain=, max_line >= 0, threads >= 1 and 0 <= start <= len(block)");
        return NULL;
    }
    int ahead_fd = -1;
    long long ahead_at = 0;
    Py_ssize_t ahead_size = 0;
    if (read_ahead) {
        if (!PyArg_ParseTuple(read_ahead, "iLn;read_ahead is (fd, offset, size)", &ahead_fd, &ahead_at, &ahead_size))
            return NULL;
        if (ahead_fd < 0 || ahead_at < 0 || ahead_size <= 0 || ahead_size > READ_AHEAD_MAX ||
            ahead_at > LLONG_MAX - ahead_size) {
            PyErr_SetString(PyExc_ValueError,
                            "read_ahead needs fd >= 0, offset >= 0, 0 < size <= 64 MiB and offset + size in range");
            return NULL;
        }
    }
    PyObject *ahead = NULL; /* the bytes the helper reads into (read_ahead with a helper) */
    Fold *F = (Fold *)fold;
    if (F) {
        if (F->verifier != (PyObject *)V) {
            PyErr_SetString(PyExc_ValueError, "check_block: the fold was made for another Verifier");
            return NULL;
        }
        F->line_base = first_line;
        F->paused = 0; /* (with threads=2 the helper stages, the calling thread takes and folds, in order) */
    }
    Taking T = {(Chain *)chain, F, PyList_New(0), {NULL, NULL, NULL}, {NULL, 0, 0, 1, NULL, 0, 0}, (size_t)start, 0, -1, 0};
    Workspace *ws = T.found ? ws_get() : NULL;
    Share *H = NULL;
    pthread_t helper;
    int rc = -1;
    if (!ws) {
        if (T.found)
            PyErr_NoMemory();
        goto done;
    }
    /* a helper thread (the caller asks for one where the block is worth it: starting it costs): the one
     * start_block started on this block, or a new one. It reads the caller's next read of the file ahead
     * first thing (the bytes' pages untouched here: its pread faults them in) */
    if (read_ahead && threads >= 2 && !(ahead = PyBytes_FromStringAndSize(NULL, ahead_size)))
        PyErr_Clear(); /* no memory for it now: the caller reads it itself, later */
    Started *St = (Started *)started_arg;
    if (St && St->H && St->pid == getpid() && threads >= 2 && St->block == block && St->start == start &&
        St->verifier == (PyObject *)V && St->H->max_line == (size_t)max_line) {
        Share *S = St->H; /* taken over unless it ended already; asked to read ahead next */
        pthread_mutex_lock(&S->mu);
        if (!S->exited) {
            if (ahead)
                ask_ahead(S, ahead, ahead_fd, ahead_at, ahead_size);
            if (S->sleeping)
                pthread_cond_broadcast(&S->cv);
            H = S;
            helper = St->helper;
            St->H = NULL; /* (stopped and freed below, as a helper of this call's own) */
        }
        pthread_mutex_unlock(&S->mu);
    }
    if (!H && threads >= 2 && (H = share_new(s, n, T.pos, (size_t)max_line, V, 1))) {
        if (ahead)
            ask_ahead(H, ahead, ahead_fd, ahead_at, ahead_size);
        if (pthread_create(&helper, NULL, helper_main, H) != 0) { /* no thread here: one thread does it all */
            share_free(H);
            H = NULL;
        }
    }
    if (!H)
        Py_CLEAR(ahead);
    if (H) {
        int r = take_shared(&T, H, ws);
        share_stop(H, helper);
        if (ahead && !H->ahead_ok)
            Py_CLEAR(ahead);
        share_free(H);
        if (r < 0)
            goto done;
    } else {
        size_t at[CHUNK_LINES], len[CHUNK_LINES], p = T.pos;
        int chunk = 1, stopped = 0;
        while (!stopped) {
            int k = frame_chunk(s, n, &p, (size_t)max_line, chunk, at, len, &stopped);
            if (k == 0)
                break;
            fill_lines(ws, s, at, len, k);
            if (stage_chunk(ws, k, V) < 0)
                goto done;
            prefetch_ids(T.C, ws, k);
            for (int j = 0; j < k; j++) {
                int t = take_line(&T, &ws->lines[j]);
                if (t < 0)
                    goto done;
                if (t != 1) {
                    stopped = 1;
                    break;
                }
            }
            if (chunk < CHUNK_LINES)
                chunk *= 2;
        }
    }
    if (build_deferred(&T.P, T.found, s, ws, V, &T.R) < 0)
        goto done;
    rc = 0;
done:
    repeats_clear(&T.R);
    if (ws)
        ws_put(ws);
    free(T.P.e);
    free(T.P.d);
    if (rc < 0) {
        Py_XDECREF(T.found);
        Py_XDECREF(ahead);
        return NULL;
    }
    PyObject *found = without_paired(T.found, T.paired);
    if (!found) {
        Py_XDECREF(ahead);
        return NULL;
    }
    PyObject *res = read_ahead ? Py_BuildValue("(nnnOO)", (Py_ssize_t)T.pos, T.taken, T.last, found, ahead ? ahead : Py_None)
                               : Py_BuildValue("(nnnO)", (Py_ssize_t)T.pos, T.taken, T.last, found);
    Py_DECREF(found);
    Py_XDECREF(ahead);
    return res;
}

static PyObject *verifier_kinds(Verifier *V, PyObject *Py_UNUSED(ignored))
{
    /* introspection for tests: {kind: (known, wants payload, needs Python, C-checked fields)} */
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (uint32_t i = 0; i < V->nkinds; i++) {
        const KindEntry *k = &V->kinds[i];
        int py = k->invariants;
        for (uint32_t j = 0; j < k->nfields; j++)
            py |= k->fields[j].python;
        PyObject *v = Py_BuildValue("(OOOI)", k->known ? Py_True : Py_False, k->want ? Py_True : Py_False,
                                    py ? Py_True : Py_False, k->nfields);
        if (!v || PyDict_SetItem(d, k->name_obj, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyMethodDef verifier_methods[] = {
    {"check_line", (PyCFunction)(void (*)(void))verifier_check_line, METH_VARARGS | METH_KEYWORDS, v_check_line_doc},
    {"check_lines", (PyCFunction)(void (*)(void))verifier_check_lines, METH_VARARGS | METH_KEYWORDS,
     v_check_lines_doc},
    {"check_block", (PyCFunction)(void (*)(void))verifier_check_block, METH_VARARGS | METH_KEYWORDS,
     v_check_block_doc},
    {"start_block", (PyCFunction)(void (*)(void))verifier_start_block, METH_VARARGS | METH_KEYWORDS,
     v_start_block_doc},
    {"kinds", (PyCFunction)verifier_kinds, METH_NOARGS, "kinds() -> dict: how each kind is checked (for tests)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *verifier_schema_version(Verifier *V, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(V->schema_version);
}

static PyGetSetDef verifier_getset[] = {
    {"schema_version", (getter)verifier_schema_version, NULL, "the schema version it checks", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject VerifierType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ract_cli._core.Verifier",
    .tp_basicsize = sizeof(Verifier),
    .tp_dealloc = (destructor)verifier_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The per-line checks of one schema version, compiled from the kind definitions (compile_kinds).",
    .tp_methods = verifier_methods,
    .tp_getset = verifier_getset,
};

/* --- compile_kinds ------------------------------------------------------------ */

/* A UTF-8 copy of a str (1), or -1 with an exception. */
static int utf8_copy(PyObject *s, const char *what, char **out, uint32_t *len)
{
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(s)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(s, &n);
    if (!p)
        return -1;
    if ((size_t)n >= UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s is too long", what);
        return -1;
    }
    *out = malloc((size_t)n + 1);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*out, p, (size_t)n + 1);
    *len = (uint32_t)n;
    return 1;
}

static unsigned json_type_bit(PyObject *name)
{
    if (!PyUnicode_Check(name))
        return 0;
    for (int i = 0; i < 7; i++)
        if (PyUnicode_CompareWithASCIIString(name, JSON_TYPE_NAMES[i]) == 0)
            return 1u << i;
    return 0;
}

/* A bound (minimum, maximum) C can compare exactly: an int or a float of magnitude <= 2^53. */
static int bound_value(PyObject *v, double *out)
{
    if (PyBool_Check(v))
        return 0;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (overflow || x > (1LL << 53) || x < -(1LL << 53))
            return 0;
        *out = (double)x;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!isfinite(x) || fabs(x) > 9007199254740992.0)
            return 0;
        *out = x;
        return 1;
    }
    return 0;
}

/* A count limit (max_length, max_items): an int. */
static int limit_value(PyObject *v, int64_t *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow)
        return 0;
    *out = x;
    return 1;
}

/* "[0-9a-f]{N}" -> N; 0 for any other pattern. */
static uint32_t hex_pattern(PyObject *pattern)
{
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(pattern, &n);
    if (!p) {
        PyErr_Clear();
        return 0;
    }
    static const char pre[] = "[0-9a-f]{";
    size_t pl = sizeof(pre) - 1;
    if ((size_t)n < pl + 2 || memcmp(p, pre, pl) != 0 || p[n - 1] != '}')
        return 0;
    uint64_t v = 0;
    for (size_t i = pl; i < (size_t)n - 1; i++) {
        if (!is_digit((uint8_t)p[i]) || v > 100000)
            return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if ((size_t)n - 1 == pl || p[pl] == '0')
        return 0;
    return (uint32_t)v;
}

/* Read one model.Field. 0 ok, -1 exception set. */
static int compile_field(PyObject *field, FieldDef *fd)
{
    PyObject *v = NULL, *seq = NULL;
    int rc = -1;
    memset(fd, 0, sizeof(*fd));
    if (!(v = PyObject_GetAttrString(field, "name")) || utf8_copy(v, "Field.name", &fd->name, &fd->nlen) < 0)
        goto done;
    Py_CLEAR(v);
    /* types */
    if (!(v = PyObject_GetAttrString(field, "types")) || !(seq = PySequence_Fast(v, "Field.types must be a sequence")))
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        unsigned bit = json_type_bit(PySequence_Fast_GET_ITEM(seq, i));
        if (!bit)
            fd->python = 1; /* model._is_type raises: let it */
        fd->types |= bit;
    }
    Py_CLEAR(seq);
    Py_CLEAR(v);
    /* enum */
    if (!(v = PyObject_GetAttrString(field, "enum")))
        goto done;
    if (v != Py_None) {
        if (!(seq = PySequence_Fast(v, "Field.enum must be a sequence")))
            goto done;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        fd->has_enum = 1;
        fd->enums = calloc((size_t)n + 1, sizeof(EnumVal));
        if (!fd->enums) {
            PyErr_NoMemory();
            goto done;
        }
        int has_bool = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            EnumVal *ev = &fd->enums[fd->nenum];
            if (PyUnicode_Check(e) && PyUnicode_CheckExact(e)) {
                Py_ssize_t el;
                const char *ep = PyUnicode_AsUTF8AndSize(e, &el);
                if (!ep) { /* a lone surrogate: no line can hold it */
                    PyErr_Clear();
                    continue;
                }
                ev->s = malloc((size_t)el + 1);
                if (!ev->s) {
                    PyErr_NoMemory();
                    goto done;
                }
                memcpy(ev->s, ep, (size_t)el + 1);
                ev->len = (uint32_t)el;
                ev->kind = E_STR;
            } else if (e == Py_True || e == Py_False) {
                ev->kind = e == Py_True ? E_TRUE : E_FALSE;
                has_bool = 1;
            } else if (e == Py_None)
                ev->kind = E_NULL;
            else {
                fd->python = 1; /* a number (1 == 1.0 == True) or anything else: Python equality */
                continue;
            }
            fd->nenum++;
        }
        if ((has_bool && (fd->types & (J_INTEGER | J_NUMBER))) || (fd->types & (J_OBJECT | J_ARRAY)))
            fd->python = 1; /* 1 in {True}; a dict in a frozenset raises */
        Py_CLEAR(seq);
    }
    Py_CLEAR(v);
    /* minimum, maximum */
    for (int which = 0; which < 2; which++) {
        if (!(v = PyObject_GetAttrString(field, which ? "maximum" : "minimum")))
            goto done;
        if (v != Py_None) {
            int r = bound_value(v, which ? &fd->max : &fd->min);
            if (r < 0)
                goto done;
            if (r == 0)
                fd->python = 1;
            else if (which)
                fd->has_max = 1;
            else
                fd->has_min = 1;
        }
        Py_CLEAR(v);
    }
    /* max_length, max_items */
    for (int which = 0; which < 2; which++) {
        if (!(v = PyObject_GetAttrString(field, which ? "max_items" : "max_length")))
            goto done;
        if (v != Py_None) {
            int r = limit_value(v, which ? &fd->max_items : &fd->max_length);
            if (r < 0)
                goto done;
            if (r == 0)
                fd->python = 1;
            else if (which)
                fd->has_max_items = 1;
            else
                fd->has_max_length = 1;
        }
        Py_CLEAR(v);
    }
    /* pattern: model compiles it only when truthy */
    if (!(v = PyObject_GetAttrString(field, "pattern")))
        goto done;
    if (v != Py_None) {
        int truthy = PyObject_IsTrue(v);
        if (truthy < 0)
            goto done;
        if (truthy) {
            uint32_t h = PyUnicode_Check(v) ? hex_pattern(v) : 0;
            if (h) {
                fd->has_hex = 1;
                fd->hexlen = h;
            } else
                fd->python = 1;
        }
    }
    Py_CLEAR(v);
    /* items */
    if (!(v = PyObject_GetAttrString(field, "items")))
        goto done;
    if (v != Py_None) {
        fd->items = json_type_bit(v);
        if (!fd->items)
            fd->python = 1;
    }
    Py_CLEAR(v);
    rc = 0;
done:
    Py_XDECREF(v);
    Py_XDECREF(seq);
    return rc;
}

static int field_cmp(const void *a, const void *b)
{
    const FieldDef *x = a, *y = b;
    return utf16_cmp((const uint8_t *)x->name, x->nlen, (const uint8_t *)y->name, y->nlen);
}

static int valid_utf8(const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if ((uint8_t)p[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq((const uint8_t *)p + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* payload_kinds: names (whole payloads) or a mapping name -> None (whole) or the keys to keep. */
static int set_payload_kinds(Verifier *V, PyObject *payload_kinds)
{
    int mapping = PyDict_Check(payload_kinds);
    PyObject *it = PyObject_GetIter(payload_kinds), *name;
    if (!it)
        return -1;
    while ((name = PyIter_Next(it))) {
        PyObject *keys = NULL, *kit = NULL, *key;
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "payload_kinds must hold str");
            goto fail;
        }
        if (mapping && !(keys = PyDict_GetItemWithError(payload_kinds, name))) /* borrowed */
            goto fail;
        Py_ssize_t ln;
        const char *p = PyUnicode_AsUTF8AndSize(name, &ln);
        KindEntry *k = p ? (KindEntry *)kind_lookup(V, (const uint8_t *)p, (size_t)ln) : NULL;
        if (!p)
            PyErr_Clear();
        if (!k) { /* not in the vocabulary: no line of it is ever accepted */
            Py_DECREF(name);
            continue;
        }
        if (!keys || keys == Py_None) {
            k->want = 1;
            Py_DECREF(name);
            continue;
        }
        k->want = 2;
        if (!(kit = PyObject_GetIter(keys)))
            goto fail;
        while ((key = PyIter_Next(kit))) {
            EnumVal *grown = realloc(k->keep, (k->nkeep + 1) * sizeof(EnumVal));
            if (!grown) {
                Py_DECREF(key);
                PyErr_NoMemory();
                goto fail;
            }
            k->keep = grown;
            EnumVal *kv = &k->keep[k->nkeep];
            memset(kv, 0, sizeof(*kv));
            int r = utf8_copy(key, "a payload key", &kv->s, &kv->len);
            Py_DECREF(key);
            if (r < 0)
                goto fail;
            k->nkeep++;
        }
        Py_CLEAR(kit);
        if (PyErr_Occurred())
            goto fail;
        Py_DECREF(name);
        continue;
    fail:
        Py_XDECREF(kit);
        Py_DECREF(name);
        Py_DECREF(it);
        return -1;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* event_kinds: the kinds whose found entries carry the whole event (names; one outside the vocabulary is
 * never accepted: skipped). */
static int set_event_kinds(Verifier *V, PyObject *event_kinds)
{
    PyObject *it = PyObject_GetIter(event_kinds), *name;
    if (!it)
        return -1;
    while ((name = PyIter_Next(it))) {
        Py_ssize_t ln;
        const char *p = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &ln) : NULL;
        if (!p) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "event_kinds must hold str");
            Py_DECREF(name);
            Py_DECREF(it);
            return -1;
        }
        KindEntry *k = (KindEntry *)kind_lookup(V, (const uint8_t *)p, (size_t)ln);
        if (k) {
            k->whole = 1;
            if (!k->want)
                k->want = 1;
        }
        Py_DECREF(name);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* closes: the kinds that may close an open (an iterable of names in the vocabulary). */
static int set_closes(Verifier *V, PyObject *closes)
{
    PyObject *it = PyObject_GetIter(closes), *name;
    if (!it)
        return -1;
    while ((name = PyIter_Next(it))) {
        Py_ssize_t ln;
        const char *p = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &ln) : NULL;
        KindEntry *k = p ? (KindEntry *)kind_lookup(V, (const uint8_t *)p, (size_t)ln) : NULL;
        if (!k) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "closes: %R is not a kind of the vocabulary", name);
            Py_DECREF(name);
            Py_DECREF(it);
            return -1;
        }
        k->closes = 1;
        Py_DECREF(name);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* pairs: a mapping close kind -> open kind (both in the vocabulary) that check_block may pair in C. */
static int set_pairs(Verifier *V, PyObject *pairs)
{
    if (!PyDict_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, "pairs must be a dict of close kind -> open kind");
        return -1;
    }
    PyObject *close, *open;
    Py_ssize_t i = 0;
    while (PyDict_Next(pairs, &i, &close, &open)) {
        const KindEntry *ends[2] = {NULL, NULL};
        PyObject *names[2] = {close, open};
        for (int j = 0; j < 2; j++) {
            Py_ssize_t ln;
            const char *p = PyUnicode_Check(names[j]) ? PyUnicode_AsUTF8AndSize(names[j], &ln) : NULL;
            if (!p) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "pairs must hold str");
                return -1;
            }
            ends[j] = kind_lookup(V, (const uint8_t *)p, (size_t)ln);
        }
        if (!ends[0] || !ends[1] || ends[0] == ends[1]) {
            PyErr_Format(PyExc_ValueError, "pairs: %R -> %R is not a close and an open of the vocabulary", close, open);
            return -1;
        }
        ((KindEntry *)ends[0])->pair_open = ends[1];
        ((KindEntry *)ends[1])->pairable = 1;
    }
    return 0;
}

PyDoc_STRVAR(compile_kinds_doc,
             "compile_kinds(kinds, validators, *, schema_version, payload_kinds=(), pairs=None, closes=None,\n"
             "              event_kinds=())\n"
             "    -> Verifier\n\n"
             "Compile the kind definitions (ract_cli.format.kinds.KINDS: KindDef objects with\n"
             "name, version, fields, invariants) into a Verifier for one schema version.\n"
             "validators maps each kind name to its payload validator (VALIDATORS); it runs\n"
             "(with the payload built) for kinds with invariants and for fields C cannot judge.\n"
             "payload_kinds: the kinds whose payload compact results carry: an iterable of\n"
             "names (the whole payload), or a mapping name -> None (the whole payload) or\n"
             "an iterable of the payload keys to keep (a dict of just those present, in the\n"
             "line's order; e.g. the documented scalar fields an open handle keeps).\n"
             "pairs: {close kind: open kind} that check_block pairs in C (see check_block); the\n"
             "kinds of both must be payload kinds. closes: every kind that may close an open\n"
             "(None: every payload kind counts as one); an event of another kind put in found\n"
             "leaves the pairing in C as it was. event_kinds: the kinds whose entries in\n"
             "check_block's found carry the whole event, (event, hash) as check_line(full=True)\n"
             "builds it, instead of the compact tuple; never a kind of pairs.");

static PyObject *core_compile_kinds(PyObject *Py_UNUSED(mod), PyObject *args, PyObject *kw)
{
    static char *names[] = {"kinds", "validators", "schema_version", "payload_kinds", "pairs", "closes",
                            "event_kinds", NULL};
    PyObject *kinds, *validators, *payload_kinds = NULL, *pairs = NULL, *closes = NULL, *event_kinds = NULL,
             *seq = NULL, *v = NULL, *fseq = NULL;
    long schema_version;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$lOOOO", names, &kinds, &validators, &schema_version,
                                     &payload_kinds, &pairs, &closes, &event_kinds))
        return NULL;
    if (!kw || !PyDict_GetItemString(kw, "schema_version")) {
        PyErr_SetString(PyExc_TypeError, "compile_kinds() needs schema_version=");
        return NULL;
    }
    if (!(seq = PySequence_Fast(kinds, "kinds must be a sequence of KindDef")))
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n >= 1 << 20) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many kinds");
        return NULL;
    }
    Verifier *V = PyObject_New(Verifier, &VerifierType);
    if (!V) {
        Py_DECREF(seq);
        return NULL;
    }
    V->schema_version = schema_version;
    V->nkinds = 0;
    V->table = NULL;
    V->kinds = calloc((size_t)n + 1, sizeof(KindEntry));
    uint32_t size = 8;
    while (size < 2 * (uint32_t)n + 2)
        size *= 2;
    V->tmask = size - 1;
    V->table = malloc(size * sizeof(uint32_t));
    if (!V->kinds || !V->table) {
        PyErr_NoMemory();
        goto fail;
    }
    for (uint32_t i = 0; i < size; i++)
        V->table[i] = NONE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kd = PySequence_Fast_GET_ITEM(seq, i);
        KindEntry *k = &V->kinds[V->nkinds++];
        if (!(v = PyObject_GetAttrString(kd, "name")) || utf8_copy(v, "KindDef.name", &k->name, &k->nlen) < 0)
            goto fail;
        k->name_obj = Py_NewRef(v);
        PyUnicode_InternInPlace(&k->name_obj);
        k->validator = PyObject_GetItem(validators, v);
        if (!k->validator)
            goto fail;
        Py_CLEAR(v);
        if (!(v = PyObject_GetAttrString(kd, "version")))
            goto fail;
        long version = PyLong_AsLong(v);
        if (version == -1 && PyErr_Occurred())
            goto fail;
        k->known = version <= schema_version;
        Py_CLEAR(v);
        if (!(v = PyObject_GetAttrString(kd, "invariants")))
            goto fail;
        int inv = PyObject_IsTrue(v);
        if (inv < 0)
            goto fail;
        k->invariants = (uint8_t)inv;
        Py_CLEAR(v);
        if (!(v = PyObject_GetAttrString(kd, "fields")) || !(fseq = PySequence_Fast(v, "KindDef.fields")))
            goto fail;
        Py_ssize_t nf = PySequence_Fast_GET_SIZE(fseq);
        k->fields = calloc((size_t)nf + 1, sizeof(FieldDef));
        if (!k->fields) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t j = 0; j < nf; j++) {
            k->nfields++;
            if (compile_field(PySequence_Fast_GET_ITEM(fseq, j), &k->fields[j]) < 0)
                goto fail;
            if (!valid_utf8(k->fields[j].name, k->fields[j].nlen))
                k->invariants = 1; /* cannot happen for a str; never compare such bytes */
        }
        qsort(k->fields, k->nfields, sizeof(FieldDef), field_cmp);
        Py_CLEAR(fseq);
        Py_CLEAR(v);
        uint32_t h = kind_hash((const uint8_t *)k->name, k->nlen) & V->tmask;
        while (V->table[h] != NONE) {
            const KindEntry *o = &V->kinds[V->table[h]];
            if (o->nlen == k->nlen && memcmp(o->name, k->name, k->nlen) == 0) {
                PyErr_Format(PyExc_ValueError, "kind %R is defined twice", k->name_obj);
                goto fail;
            }
            h = (h + 1) & V->tmask;
        }
        V->table[h] = V->nkinds - 1;
    }
    Py_CLEAR(seq);
    if (payload_kinds && payload_kinds != Py_None && set_payload_kinds(V, payload_kinds) < 0)
        goto fail;
    if (pairs && pairs != Py_None && set_pairs(V, pairs) < 0)
        goto fail;
    if (event_kinds && event_kinds != Py_None && set_event_kinds(V, event_kinds) < 0)
        goto fail;
    if (closes && closes != Py_None) {
        if (set_closes(V, closes) < 0)
            goto fail;
    } else
        for (uint32_t i = 0; i < V->nkinds; i++)
            V->kinds[i].closes = 1; /* (not told: any event put in found may close one) */
    for (uint32_t i = 0; pairs && pairs != Py_None && i < V->nkinds; i++)
        if (V->kinds[i].pair_open && !V->kinds[i].closes && closes && closes != Py_None) {
            PyErr_Format(PyExc_ValueError, "closes: the close %R of pairs is missing", V->kinds[i].name_obj);
            goto fail;
        }
    for (uint32_t i = 0; i < V->nkinds; i++) {
        const KindEntry *k = &V->kinds[i];
        if ((k->pairable && !k->want) || (k->pair_open && !k->want)) {
            PyErr_Format(PyExc_ValueError, "pairs: kind %R is not a payload kind", k->name_obj);
            goto fail;
        }
        if (k->whole && (k->pairable || k->pair_open)) { /* (a deferred open's entry is compact) */
            PyErr_Format(PyExc_ValueError, "pairs: kind %R is an event kind", k->name_obj);
            goto fail;
        }
    }
    return (PyObject *)V;
fail:
    Py_XDECREF(v);
    Py_XDECREF(fseq);
    Py_XDECREF(seq);
    Py_DECREF(V);
    return NULL;
}

/* --- the prefilter of grep --no-verify ---------------------------------------------- */

/* Newlines in p[0, n): 16 bytes at a time where SSE2 is (a log's lines are hundreds of bytes: memchr
 * per line would cost a call each). */
static size_t count_newlines(const uint8_t *p, size_t n)
{
    size_t count = 0, i = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        count += (size_t)__builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)));
    }
#endif
    for (; i < n; i++)
        count += p[i] == '\n';
    return count;
}

/* The first place of needle (m bytes) in s[0, n), or NULL: 16 places at a time, those whose first and
 * last bytes both match compared whole (SSE2; memmem elsewhere and for the last few bytes). memmem
 * here scanned a log at 1.3 GB/s. */
static const uint8_t *find_needle(const uint8_t *s, size_t n, const uint8_t *needle, size_t m)
{
    size_t i = 0;
#ifdef __SSE2__
    if (m >= 2) {
        const __m128i first = _mm_set1_epi8((char)needle[0]), last = _mm_set1_epi8((char)needle[m - 1]);
        for (; i + m - 1 + 16 <= n; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(s + i + m - 1));
            unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
            while (mask) {
                unsigned bit = (unsigned)__builtin_ctz(mask);
                if (memcmp(s + i + bit + 1, needle + 1, m - 2) == 0)
                    return s + i + bit;
                mask &= mask - 1;
            }
        }
    }
#endif
    const void *at = i < n ? memmem(s + i, n - i, needle, m) : NULL;
    return (const uint8_t *)at;
}

/* The first of the needles in s[from, to), or `to`. next[i]: needle i's next place at or after from (to:
 * none), found again only once from has passed it. */
static size_t next_needle(const uint8_t *s, size_t from, size_t to, Py_buffer *needles, size_t *next, Py_ssize_t k)
{
    size_t best = to;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (next[i] < from) {
            const uint8_t *at = from < to ? find_needle(s + from, to - from, needles[i].buf, (size_t)needles[i].len) : NULL;
            next[i] = at ? (size_t)(at - s) : to;
        }
        if (next[i] < best)
            best = next[i];
    }
    return best;
}

PyDoc_STRVAR(find_lines_doc,
             "find_lines(data: bytes, lo: int, hi: int, needles: Sequence[bytes]) -> (list[int], int)\n\n"
             "The lines of data[lo:hi] (each ending in \"\\n\") holding at least one of the needles (non-empty,\n"
             "without \"\\n\"), as a flat list start, stop, line, ... (line: the newlines in data[lo:start]),\n"
             "and the newlines in data[lo:hi]: the prefilter of grep --no-verify (framing._frame_prefiltered).");

static PyObject *core_find_lines(PyObject *Py_UNUSED(mod), PyObject *args)
{
    PyObject *data, *needles_arg, *seq = NULL, *found = NULL;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "O!nnO", &PyBytes_Type, &data, &lo, &hi, &needles_arg))
        return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (lo < 0 || hi < lo || hi > n) {
        PyErr_SetString(PyExc_ValueError, "find_lines needs 0 <= lo <= hi <= len(data)");
        return NULL;
    }
    if (!(seq = PySequence_Fast(needles_arg, "needles must be a sequence of bytes")))
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    Py_buffer *needles = k ? PyMem_Calloc((size_t)k, sizeof(Py_buffer)) : NULL;
    size_t *next = k ? PyMem_Calloc((size_t)k, sizeof(size_t)) : NULL;
    Py_ssize_t got = 0;
    if (k == 0 || !needles || !next) {
        if (k == 0)
            PyErr_SetString(PyExc_ValueError, "find_lines needs at least one needle");
        else
            PyErr_NoMemory();
        goto done;
    }
    for (; got < k; got++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &needles[got], PyBUF_SIMPLE) < 0)
            goto done;
        if (needles[got].len == 0 || memchr(needles[got].buf, '\n', (size_t)needles[got].len)) {
            got++;
            PyErr_SetString(PyExc_ValueError, "a needle is non-empty and holds no newline");
            goto done;
        }
    }
    if (!(found = PyList_New(0)))
        goto done;
    const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(data);
    size_t pos = (size_t)lo, end = (size_t)hi, line = 0;
    for (Py_ssize_t i = 0; i < k; i++) { /* every needle's first place */
        const uint8_t *at = pos < end ? find_needle(s + pos, end - pos, needles[i].buf, (size_t)needles[i].len) : NULL;
        next[i] = at ? (size_t)(at - s) : end;
    }
    while (pos < end) {
        size_t hit = next_needle(s, pos, end, needles, next, k);
        if (hit >= end)
            break;
        size_t start = hit;
        while (start > pos && s[start - 1] != '\n')
            start--;
        const uint8_t *nl = memchr(s + hit, '\n', end - hit);
        size_t stop = nl ? (size_t)(nl - s) + 1 : end;
        line += count_newlines(s + pos, start - pos);
        PyObject *t[3] = {PyLong_FromSize_t(start), PyLong_FromSize_t(stop), PyLong_FromSize_t(line)};
        int bad = !t[0] || !t[1] || !t[2];
        for (int j = 0; j < 3; j++) {
            if (!bad && PyList_Append(found, t[j]) < 0)
                bad = 1;
            Py_XDECREF(t[j]);
        }
        if (bad) {
            Py_CLEAR(found);
            goto done;
        }
        line += nl != NULL; /* (the hit's own line) */
        pos = stop;
    }
    line += count_newlines(s + pos, end > pos ? end - pos : 0);
    {
        PyObject *res = Py_BuildValue("(Nn)", found, (Py_ssize_t)line);
        found = NULL;
        for (Py_ssize_t i = 0; i < got; i++)
            PyBuffer_Release(&needles[i]);
        PyMem_Free(needles);
        PyMem_Free(next);
        Py_DECREF(seq);
        return res;
    }
done:
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&needles[i]);
    PyMem_Free(needles);
    PyMem_Free(next);
    Py_XDECREF(found);
    Py_DECREF(seq);
    return NULL;
}

/* --- Fold: the Python type ------------------------------------------------------ */

static void fold_dealloc(Fold *F)
{
    groups_clear(F);
    free(F->g);
    free(F->slot);
    buf_free(&F->kb);
    buf_free(&F->durations);
    for (uint32_t i = 0; F->fk && i < F->nkinds; i++) {
        FoldKind *k = &F->fk[i];
        for (int j = 0; j < FOLD_KEYS; j++)
            free(k->keys[j]);
        free(k->vfield);
        free(k->bfield);
        free(k->bvalue);
    }
    free(F->fk);
    free(F->counts);
    Py_XDECREF(F->records);
    Py_XDECREF(F->verifier);
    Py_TYPE(F)->tp_free((PyObject *)F);
}

/* One kind's rule: (action, keys, value, bit, last, step); see Fold's doc. 0 ok, -1 exception set. */
static int fold_kind(FoldKind *k, PyObject *rule, const char *name)
{
    PyObject *keys, *value, *bit;
    int action, last, step;
    if (!PyTuple_Check(rule) || !PyArg_ParseTuple(rule, "iO!OOpi", &action, &PyTuple_Type, &keys, &value, &bit, &last, &step))
        goto bad;
    if (action < FA_COUNT || action > FA_STOP || step < FSTEP_NONE || step > FSTEP_CLOSE ||
        PyTuple_GET_SIZE(keys) > FOLD_KEYS)
        goto bad;
    k->action = (uint8_t)action;
    k->last = (uint8_t)last;
    k->step = (uint8_t)step;
    k->nkeys = (uint8_t)PyTuple_GET_SIZE(keys);
    for (int i = 0; i < k->nkeys; i++)
        if (utf8_copy(PyTuple_GET_ITEM(keys, i), "a fold key", &k->keys[i], &k->klen[i]) < 0)
            return -1;
    if (value != Py_None) {
        PyObject *field;
        int how;
        if (!PyTuple_Check(value) || !PyArg_ParseTuple(value, "Oi", &field, &how) || how < FV_INT_NONNEG ||
            how > FV_INT_POS_SUM)
            goto bad;
        k->value = (uint8_t)how;
        if (utf8_copy(field, "a fold value", &k->vfield, &k->vlen) < 0)
            return -1;
    }
    if (bit != Py_None) {
        PyObject *field, *want;
        if (!PyTuple_Check(bit) || !PyArg_ParseTuple(bit, "OO", &field, &want))
            goto bad;
        if (utf8_copy(field, "a fold bit", &k->bfield, &k->blen) < 0 ||
            utf8_copy(want, "a fold bit", &k->bvalue, &k->bvlen) < 0)
            return -1;
    }
    return 0;
bad:
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "Fold: a bad rule for %s", name);
    }
    return -1;
}

static PyObject *fold_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"verifier", "kinds", "max_items", "groups", NULL};
    PyObject *verifier, *rules;
    Py_ssize_t max_items, max_groups = 4096;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!n|$n", names, &VerifierType, &verifier, &PyDict_Type, &rules,
                                     &max_items, &max_groups))
        return NULL;
    Fold *F = (Fold *)type->tp_alloc(type, 0);
    if (!F)
        return NULL;
    const Verifier *V = (const Verifier *)verifier;
    F->verifier = Py_NewRef(verifier);
    F->max_items = max_items < 0 ? 0 : max_items;
    F->max_groups = max_groups < 1 ? 1 : (size_t)max_groups;
    F->nkinds = V->nkinds;
    F->fk = calloc(V->nkinds ? V->nkinds : 1, sizeof(FoldKind));
    F->counts = calloc(V->nkinds ? V->nkinds : 1, sizeof(int64_t));
    F->records = PyList_New(0);
    if (!F->fk || !F->counts || !F->records) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_DECREF(F);
        return NULL;
    }
    for (uint32_t i = 0; i < V->nkinds; i++) {
        PyObject *rule = PyDict_GetItemWithError(rules, V->kinds[i].name_obj);
        if (!rule && PyErr_Occurred()) {
            Py_DECREF(F);
            return NULL;
        }
        if (rule && fold_kind(&F->fk[i], rule, V->kinds[i].name) < 0) {
            Py_DECREF(F);
            return NULL;
        }
    }
    return (PyObject *)F;
}

static PyObject *buf_bytes(const Buf *b) { return PyBytes_FromStringAndSize((const char *)b->p, (Py_ssize_t)b->n); }

PyDoc_STRVAR(fold_take_doc, "take(groups: bool) -> (groups, records, durations)\n\n"
                            "What the calls since the last take folded, then forgotten: groups (only when asked:\n"
                            "else they go on gathering, [] here), in the order their first lines came, each (kind,\n"
                            "n (events), first line, last line or None, the last line's number, int64 samples, double\n"
                            "samples, sum); records, the steps itemized; durations, int64 (bytes, native order).");

static PyObject *fold_take(Fold *F, PyObject *arg)
{
    const Verifier *V = (const Verifier *)F->verifier;
    int all = PyObject_IsTrue(arg);
    if (all < 0)
        return NULL;
    size_t ng = all ? F->ng : 0;
    PyObject *groups = PyList_New((Py_ssize_t)ng), *res = NULL;
    if (!groups)
        return NULL;
    for (size_t i = 0; i < ng; i++) {
        const Group *g = &F->g[i];
        PyObject *t = Py_BuildValue("(OLNNnNNL)", V->kinds[g->kind].name_obj, (long long)g->count, buf_bytes(&g->first),
                                    F->fk[g->kind].last ? buf_bytes(&g->last) : Py_NewRef(Py_None), g->last_line,
                                    buf_bytes(&g->ints), buf_bytes(&g->nums), (long long)g->sum);
        if (!t) {
            Py_DECREF(groups);
            return NULL;
        }
        PyList_SET_ITEM(groups, (Py_ssize_t)i, t);
    }
    /* F->records is handed out only once all else is built (a failure leaves the fold as it was) */
    PyObject *durations = buf_bytes(&F->durations), *records = durations ? PyList_New(0) : NULL;
    if (!records) {
        Py_XDECREF(durations);
        Py_DECREF(groups);
        return NULL;
    }
    res = Py_BuildValue("(NON)", groups, F->records, durations); /* (on failure it releases the N's) */
    if (!res) {
        Py_DECREF(records);
        return NULL;
    }
    Py_SETREF(F->records, records);
    F->durations.n = 0;
    if (all)
        groups_clear(F);
    return res;
}

static PyObject *fold_counts(Fold *F, PyObject *Py_UNUSED(ignored))
{
    const Verifier *V = (const Verifier *)F->verifier;
    PyObject *d = PyDict_New();
    for (uint32_t i = 0; d && i < F->nkinds; i++) {
        if (!F->counts[i])
            continue;
        PyObject *n = PyLong_FromLongLong(F->counts[i]);
        if (!n || PyDict_SetItem(d, V->kinds[i].name_obj, n) < 0)
            Py_CLEAR(d);
        Py_XDECREF(n);
    }
    return d;
}

PyDoc_STRVAR(fold_regroup_doc, "regroup(kind: str) -> None\n\n"
                               "From the next call on, group the lines of a kind left to Python (action 3) by its\n"
                               "rule's keys, value and bit, as action 2: once its handler would only count them.");

static PyObject *fold_regroup(Fold *F, PyObject *name)
{
    const Verifier *V = (const Verifier *)F->verifier;
    for (uint32_t i = 0; i < F->nkinds; i++) {
        const KindEntry *e = &V->kinds[i];
        int eq = PyObject_RichCompareBool(e->name_obj, name, Py_EQ);
        if (eq < 0)
            return NULL;
        if (!eq)
            continue;
        if (F->fk[i].action != FA_PY || e->pairable || e->pair_open || e->closes) {
            PyErr_Format(PyExc_ValueError, "Fold.regroup: %s is not a kind left to Python, or pairs", e->name);
            return NULL;
        }
        F->fk[i].action = FA_GROUP;
        F->fk[i].regrouped = 1;
        Py_RETURN_NONE;
    }
    PyErr_SetString(PyExc_ValueError, "Fold.regroup: no such kind");
    return NULL;
}

static PyObject *fold_get_paused(Fold *F, void *Py_UNUSED(c)) { return PyBool_FromLong(F->paused); }
static PyObject *fold_get_gave_up(Fold *F, void *Py_UNUSED(c))
{
    return F->gave_up ? PyUnicode_FromString(F->gave_up) : Py_NewRef(Py_None);
}

static PyGetSetDef fold_getset[] = {
    {"paused", (getter)fold_get_paused, NULL, "whether the last check_block stopped after a line it folded", NULL},
    {"gave_up", (getter)fold_get_gave_up, NULL, "why C cannot fold this log exactly, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef fold_methods[] = {
    {"take", (PyCFunction)fold_take, METH_O, fold_take_doc},
    {"counts", (PyCFunction)fold_counts, METH_NOARGS, "counts() -> dict: the events folded, per kind."},
    {"regroup", (PyCFunction)fold_regroup, METH_O, fold_regroup_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(fold_doc,
             "Fold(verifier, kinds, max_items, *, groups=4096): what Verifier.check_block(..., fold=) folds of\n"
             "the lines it takes; a call pauses once there are `groups` groups (or they hold 4 MiB).\n\n"
             "kinds: kind -> (action, keys, value, bit, last, step). action: 1 count only, 2 group, 3 count\n"
             "and leave to Python (a kind compiled as wanted: handed out whole), 4 as 3, and the call stops\n"
             "after it; a kind without a rule makes the fold give up. A group (2) gathers the lines of one\n"
             "kind whose payload values of keys (at most 3 field names) are equal (a string, true, false,\n"
             "null or absent; any other value gives up), and whose value of bit[0] is the string bit[1] or\n"
             "not. value: (field, how): 1 keep each int >= 0, 2 keep each int or float >= 0 as a double\n"
             "(whether there is one is part of the key), 3 sum the ints > 0, saturating at 2**63 - 1.\n"
             "last: keep the group's last line. step: 1 a step's open (the first max_items are recorded:\n"
             "(\"o\", line, id, step_id)), 2 its close (C's pairing times it; an itemized open's close is\n"
             "recorded: (\"c\", the open's line, line, kind, outcome, reason, duration)). A close whose\n"
             "payload says synthesized gives up.");

static PyTypeObject FoldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ract_cli._core.Fold",
    .tp_basicsize = sizeof(Fold),
    .tp_dealloc = (destructor)fold_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = fold_doc,
    .tp_new = fold_new,
    .tp_methods = fold_methods,
    .tp_getset = fold_getset,
};

/* --- JSON in and out, for Python's own values ------------------------------------ */

PyDoc_STRVAR(loads_doc,
             "loads(data: bytes) -> object | None\n\n"
             "The value of one JSON document under the strict line rules (SPEC §2.1), built as\n"
             "check_line builds an event (keys in the document's order, as orjson.loads); None when\n"
             "the rules refuse it (the caller then reads it with orjson or json).");

static PyObject *core_loads(PyObject *Py_UNUSED(mod), PyObject *arg)
{
    int r;
    Workspace *ws = value_arg(arg, &r);
    if (!ws)
        return NULL;
    PyObject *res = r < 0 ? NULL : r == 0 ? Py_NewRef(Py_None) : build(&ws->lines[0], 0);
    ws_put(ws);
    return res;
}

/* dumps: orjson.dumps's bytes for the values it knows exactly (the exact built-in types); anything
 * else, or what orjson refuses, is left to the caller (orjson, then json). */
#define DUMP_DEPTH 128 /* (below orjson's own limit: deeper is orjson's to judge) */
enum { DUMP_OK = 0, DUMP_ERROR = -1, DUMP_REFUSED = -2 };

static int dump_value(Buf *b, PyObject *o, int indent, int sort, int depth);

static int dump_newline(Buf *b, int depth)
{
    size_t n = 1 + 2 * (size_t)depth;
    if (n > b->cap - b->n && buf_grow(b, n) < 0)
        return DUMP_ERROR;
    b->p[b->n] = '\n';
    memset(b->p + b->n + 1, ' ', n - 1);
    b->n += n;
    return DUMP_OK;
}

static int dump_str(Buf *b, PyObject *o)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(o, &n); /* (a lone surrogate: orjson refuses it too) */
    if (!u) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return DUMP_ERROR;
        PyErr_Clear();
        return DUMP_REFUSED;
    }
    if (buf_put(b, "\"", 1) < 0)
        return DUMP_ERROR;
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)u[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t k = 2;
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = "0123456789abcdef"[c >> 4];
            esc[5] = "0123456789abcdef"[c & 15];
            k = 6;
        }
        if (buf_put(b, u + run, (size_t)(i - run)) < 0 || buf_put(b, esc, k) < 0)
            return DUMP_ERROR;
        run = i + 1;
    }
    if (buf_put(b, u + run, (size_t)(n - run)) < 0 || buf_put(b, "\"", 1) < 0)
        return DUMP_ERROR;
    return DUMP_OK;
}

/* A finite double as orjson writes it: repr's shortest digits, but an exponent of -5 laid out in
 * full (0.0000ddd) and -6..-9 without repr's leading zero (1e-6); tests/test_json_text.py holds it. */
static int dump_float(Buf *b, double x)
{
    if (!isfinite(x))
        return buf_put(b, "null", 4) < 0 ? DUMP_ERROR : DUMP_OK;
    char *r = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!r)
        return DUMP_ERROR;
    int rc = DUMP_OK;
    char *e = strstr(r, "e-0");
    if (e && e[3] == '5' && e[4] == '\0') {
        const char *m = r;
        if (*m == '-' && buf_put(b, "-", 1) < 0)
            rc = DUMP_ERROR;
        m += *m == '-';
        if (rc == DUMP_OK && buf_put(b, "0.0000", 6) < 0)
            rc = DUMP_ERROR;
        for (; rc == DUMP_OK && m < e; m++)
            if (*m != '.' && buf_put(b, m, 1) < 0)
                rc = DUMP_ERROR;
    } else if (e) {
        if (buf_put(b, r, (size_t)(e - r) + 2) < 0 || buf_put(b, e + 3, strlen(e + 3)) < 0)
            rc = DUMP_ERROR;
    } else if (buf_put(b, r, strlen(r)) < 0) {
        rc = DUMP_ERROR;
    }
    PyMem_Free(r);
    return rc;
}

/* Digits of a magnitude, sign first when neg (printf's %llu is a tenth of a report's time). */
static int dump_digits(Buf *b, unsigned long long u, int neg)
{
    char d[24];
    int k = (int)sizeof d;
    do {
        d[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg)
        d[--k] = '-';
    return buf_put(b, d + k, sizeof d - (size_t)k) < 0 ? DUMP_ERROR : DUMP_OK;
}

static int dump_int(Buf *b, PyObject *o)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return DUMP_ERROR;
    if (overflow > 0) { /* orjson takes up to 2**64 - 1 */
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return DUMP_ERROR;
            PyErr_Clear();
            return DUMP_REFUSED;
        }
        return dump_digits(b, u, 0);
    }
    if (overflow < 0)
        return DUMP_REFUSED;
    return dump_digits(b, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0);
}

/* One member of an object: its key (a str, else orjson's to refuse), ": " and its value. */
static int dump_member(Buf *b, PyObject *key, PyObject *value, int indent, int sort, int depth)
{
    if (!PyUnicode_CheckExact(key))
        return DUMP_REFUSED;
    int rc = dump_str(b, key);
    if (rc != DUMP_OK)
        return rc;
    if (buf_put(b, indent ? ": " : ":", indent ? 2 : 1) < 0)
        return DUMP_ERROR;
    return dump_value(b, value, indent, sort, depth + 1);
}

/* An array, or an object (keys: a list of our own, its keys in the order to write them; NULL: the
 * dict's own order). Python code can run while a value is written: a collection that allocating a
 * keys list starts may run finalizers, which may touch any container. So each item is held while it
 * is written, and a container whose size changes under the writer is left to orjson. */
static int dump_container(Buf *b, PyObject *o, PyObject *keys, int indent, int sort, int depth)
{
    int is_dict = PyDict_CheckExact(o), rc = DUMP_OK;
    Py_ssize_t n = is_dict ? PyDict_GET_SIZE(o) : PySequence_Fast_GET_SIZE(o), pos = 0;
    if (keys && PyList_GET_SIZE(keys) != n)
        return DUMP_REFUSED;
    if (buf_put(b, is_dict ? "{" : "[", 1) < 0)
        return DUMP_ERROR;
    for (Py_ssize_t i = 0; i < n && rc == DUMP_OK; i++) {
        PyObject *k = NULL, *v = NULL;
        if ((is_dict ? PyDict_GET_SIZE(o) : PySequence_Fast_GET_SIZE(o)) != n)
            return DUMP_REFUSED;
        if ((i && buf_put(b, ",", 1) < 0) || (indent && dump_newline(b, depth + 1) < 0))
            return DUMP_ERROR;
        if (!is_dict) {
            v = PySequence_Fast_GET_ITEM(o, i);
        } else if (keys) {
            k = PyList_GET_ITEM(keys, i);
            if (!(v = PyDict_GetItemWithError(o, k)))
                return PyErr_Occurred() ? DUMP_ERROR : DUMP_REFUSED;
        } else if (!PyDict_Next(o, &pos, &k, &v)) {
            return DUMP_REFUSED;
        }
        Py_XINCREF(k);
        Py_INCREF(v);
        rc = k ? dump_member(b, k, v, indent, sort, depth) : dump_value(b, v, indent, sort, depth + 1);
        Py_XDECREF(k);
        Py_DECREF(v);
    }
    if (rc != DUMP_OK)
        return rc;
    if ((n && indent && dump_newline(b, depth) < 0) || buf_put(b, is_dict ? "}" : "]", 1) < 0)
        return DUMP_ERROR;
    return DUMP_OK;
}

/* Whether every key of the list is an exact str: then sorting them runs no Python code (anything
 * else is orjson's to refuse, and a key's own __lt__ could change what is being written). */
static int all_str(PyObject *keys)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(keys, i)))
            return 0;
    return 1;
}

static int dump_value(Buf *b, PyObject *o, int indent, int sort, int depth)
{
    if (o == Py_None)
        return buf_put(b, "null", 4) < 0 ? DUMP_ERROR : DUMP_OK;
    if (o == Py_True)
        return buf_put(b, "true", 4) < 0 ? DUMP_ERROR : DUMP_OK;
    if (o == Py_False)
        return buf_put(b, "false", 5) < 0 ? DUMP_ERROR : DUMP_OK;
    if (PyUnicode_CheckExact(o))
        return dump_str(b, o);
    if (PyLong_CheckExact(o))
        return dump_int(b, o);
    if (PyFloat_CheckExact(o))
        return dump_float(b, PyFloat_AS_DOUBLE(o));
    int is_dict = PyDict_CheckExact(o);
    if (!is_dict && !PyList_CheckExact(o) && !PyTuple_CheckExact(o))
        return DUMP_REFUSED;
    if (depth >= DUMP_DEPTH)
        return DUMP_REFUSED;
    if (!is_dict || !sort || PyDict_GET_SIZE(o) < 2)
        return dump_container(b, o, NULL, indent, sort, depth);
    PyObject *keys = PyDict_Keys(o); /* (checked after it is made: making it may run a finalizer) */
    if (!keys)
        return DUMP_ERROR;
    int rc = !all_str(keys) ? DUMP_REFUSED : PyList_Sort(keys) < 0 ? DUMP_ERROR : DUMP_OK;
    if (rc == DUMP_OK)
        rc = dump_container(b, o, keys, indent, sort, depth);
    Py_DECREF(keys);
    return rc;
}

PyDoc_STRVAR(dumps_doc,
             "dumps(value: object, indent: bool = False, sort_keys: bool = False) -> bytes | None\n\n"
             "orjson.dumps(value, option=OPT_INDENT_2 if indent, OPT_SORT_KEYS if sort_keys),\n"
             "byte for byte, for a value of dict, list, tuple, str, int, float, bool and None\n"
             "(exact types; dict keys str); None for any other value or one orjson refuses\n"
             "(the caller then writes it with orjson).");

static PyObject *core_dumps(PyObject *Py_UNUSED(mod), PyObject *args, PyObject *kw)
{
    static char *names[] = {"value", "indent", "sort_keys", NULL};
    PyObject *value;
    int indent = 0, sort = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pp:dumps", names, &value, &indent, &sort))
        return NULL;
    Buf b = {NULL, 0, 0};
    if (buf_grow(&b, 4096) < 0) /* (from 64 bytes, a report's megabyte would be copied sixteen times) */
        return PyErr_NoMemory();
    int rc = dump_value(&b, value, indent, sort, 0);
    if (rc == DUMP_ERROR && !PyErr_Occurred())
        PyErr_NoMemory(); /* (the buffer could not grow) */
    PyObject *res = rc == DUMP_OK      ? PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.n)
                    : rc == DUMP_ERROR ? NULL
                                       : Py_NewRef(Py_None);
    buf_free(&b);
    return res;
}

/* --- module ------------------------------------------------------------------- */

static PyMethodDef core_methods[] = {
    {"check_line", core_check_line, METH_O, check_line_doc},
    {"check_lines", core_check_lines, METH_O, check_lines_doc},
    {"canonical", core_canonical, METH_O, canonical_doc},
    {"loads", core_loads, METH_O, loads_doc},
    {"dumps", (PyCFunction)(void (*)(void))core_dumps, METH_VARARGS | METH_KEYWORDS, dumps_doc},
    {"find_lines", core_find_lines, METH_VARARGS, find_lines_doc},
    {"compile_kinds", (PyCFunction)(void (*)(void))core_compile_kinds, METH_VARARGS | METH_KEYWORDS,
     compile_kinds_doc},
    {NULL, NULL, 0, NULL},
};

static void core_free(void *Py_UNUSED(mod))
{
    while (g_npool > 0) {
        Workspace *ws = g_pool[--g_npool];
        for (int i = 0; i < CHUNK_LINES; i++)
            line_free(&ws->lines[i]);
        sha_close(&ws->sha);
        free(ws);
    }
    for (int i = 0; i < KC_SIZE; i++)
        Py_CLEAR(g_kcache[i]);
    for (int i = 0; i < K_COUNT; i++)
        Py_CLEAR(g_env_keys[i]);
#ifndef RACT_SHA_LOW
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    EVP_MD_free(g_md_fetched);
    g_md_fetched = NULL;
#endif
    g_md = NULL;
#endif
}

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ract_cli._core",
    .m_doc = "The native per-line core of ract (SPEC §11): strict parse, envelope, payload, canonical hash.",
    .m_size = -1, /* single-phase: the caches above are process-wide */
    .m_methods = core_methods,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
#ifndef RACT_SHA_LOW
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    g_md_fetched = EVP_MD_fetch(NULL, "SHA256", NULL); /* once: an implicit fetch per line costs */
    g_md = g_md_fetched;
#else
    g_md = EVP_sha256();
#endif
    if (!g_md) {
        PyErr_SetString(PyExc_ImportError, "ract_cli._core: OpenSSL has no SHA-256");
        return NULL;
    }
#endif
    id_key_init();
#if LD_DIGITS > 15
    ld_probe();
#endif
    if (PyType_Ready(&VerifierType) < 0 || PyType_Ready(&IdSetType) < 0 || PyType_Ready(&ChainType) < 0 ||
        PyType_Ready(&FoldType) < 0 || PyType_Ready(&StartedType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    for (int i = 0; i < K_COUNT; i++) {
        /* seed the key cache with the envelope keys */
        g_env_keys[i] = make_cached((const uint8_t *)ENVELOPE[i], strlen(ENVELOPE[i]), 1);
        if (!g_env_keys[i]) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(m, "MAX_NESTING", MAX_DEPTH) < 0 ||
        PyModule_AddObjectRef(m, "Verifier", (PyObject *)&VerifierType) < 0 ||
        PyModule_AddObjectRef(m, "IdSet", (PyObject *)&IdSetType) < 0 ||
        PyModule_AddObjectRef(m, "Chain", (PyObject *)&ChainType) < 0 ||
        PyModule_AddObjectRef(m, "Fold", (PyObject *)&FoldType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
