// A CPU rasteriser for ImGui's draw data (soft_render.h).
#include "ui/plot/soft_render.h"

#include <algorithm>
#include <cmath>

#include "core/assert.h"

namespace tw::ui {
namespace {

constexpr int kSubBits = 8;  // fixed point: 1/256 pixel
constexpr int64_t kOne = int64_t(1) << kSubBits;
constexpr float kMaxCoord = float(1 << 20);  // pixels (the plot widget clamps to ±1e6); edge products stay < 2^60

struct Fixed {
    int64_t x, y;
};

Fixed to_fixed(ImVec2 p) {
    const float x = std::clamp(p.x, -kMaxCoord, kMaxCoord), y = std::clamp(p.y, -kMaxCoord, kMaxCoord);
    return {int64_t(std::llround(double(x) * kOne)), int64_t(std::llround(double(y) * kOne))};
}

// Twice the signed area of (a, b, p): > 0 when p is on the inside of edge a→b of a triangle whose
// own orient(a, b, c) is > 0.
int64_t orient(const Fixed& a, const Fixed& b, const Fixed& p) {
    return (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
}

// A pixel centre exactly on edge a→b belongs to the triangle only for these edges: GL's top-left
// rule, which holds in GL's framebuffer where y points up, so in ImGui's y-down pixels it owns
// left and bottom edges (with orient > 0, a left edge runs up, a bottom edge runs left). The same
// edge seen from the neighbouring triangle runs b→a and gets the opposite answer, so a shared
// edge's pixels are drawn once. ImGui and the plot widget put many vertices on pixel centres
// (lines at x + 0.5, the plot's bands), so this decides which row or column such a shape
// covers, and it matches what the workbench shows.
bool owns_edge(const Fixed& a, const Fixed& b) {
    const int64_t dx = b.x - a.x, dy = b.y - a.y;
    return dy < 0 || (dy == 0 && dx < 0);
}

struct Rgba {
    float r, g, b, a;  // 0..1
};

Rgba unpack(ImU32 c) {
    return {float((c >> IM_COL32_R_SHIFT) & 0xFF) / 255.0f, float((c >> IM_COL32_G_SHIFT) & 0xFF) / 255.0f,
            float((c >> IM_COL32_B_SHIFT) & 0xFF) / 255.0f, float((c >> IM_COL32_A_SHIFT) & 0xFF) / 255.0f};
}

// Bilinear coverage at texture coordinates (u, v) with clamp-to-edge, as GL_LINEAR samples.
float sample(const SoftTexture& t, float u, float v) {
    const float fx = u * float(t.width) - 0.5f, fy = v * float(t.height) - 0.5f;
    const float x0f = std::floor(fx), y0f = std::floor(fy);
    const float ax = fx - x0f, ay = fy - y0f;
    auto texel = [&](int x, int y) {
        x = std::clamp(x, 0, t.width - 1);
        y = std::clamp(y, 0, t.height - 1);
        return float(t.alpha[size_t(y) * size_t(t.width) + size_t(x)]);
    };
    const int x0 = int(x0f), y0 = int(y0f);
    const float top = texel(x0, y0) * (1 - ax) + texel(x0 + 1, y0) * ax;
    const float bottom = texel(x0, y0 + 1) * (1 - ax) + texel(x0 + 1, y0 + 1) * ax;
    return (top * (1 - ay) + bottom * ay) / 255.0f;
}

uint8_t to_byte(float v) { return uint8_t(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); }

// Pixels [x0, x1) × [y0, y1) of the image that a command may touch.
struct PixelRect {
    int x0, y0, x1, y1;
};

// One triangle (ImGui coordinates already mapped to pixels), clipped to `clip`.
void draw_triangle(const ImDrawVert* v[3], const ImVec2 pos[3], const SoftTexture* tex, const PixelRect& clip,
                   RgbaImage& out) {
    for (int k = 0; k < 3; ++k)
        if (!std::isfinite(pos[k].x) || !std::isfinite(pos[k].y)) return;
    Fixed p[3] = {to_fixed(pos[0]), to_fixed(pos[1]), to_fixed(pos[2])};
    int order[3] = {0, 1, 2};
    int64_t area = orient(p[0], p[1], p[2]);
    if (area == 0) return;
    if (area < 0) {  // make it positive: swap b and c
        std::swap(p[1], p[2]);
        std::swap(order[1], order[2]);
        area = -area;
    }
    // Bounding box of pixel centres, inside the clip rectangle.
    const int64_t min_x = std::min({p[0].x, p[1].x, p[2].x}), max_x = std::max({p[0].x, p[1].x, p[2].x});
    const int64_t min_y = std::min({p[0].y, p[1].y, p[2].y}), max_y = std::max({p[0].y, p[1].y, p[2].y});
    // Pixel x has its centre at x·256 + 128: the first centre ≥ min is ceil((min − 128) / 256).
    auto first_px = [](int64_t lo) { return int((lo - kOne / 2 + kOne - 1) >> kSubBits); };
    auto last_px = [](int64_t hi) { return int((hi - kOne / 2) >> kSubBits); };
    const int x0 = std::max(clip.x0, first_px(min_x)), x1 = std::min(clip.x1 - 1, last_px(max_x));
    const int y0 = std::max(clip.y0, first_px(min_y)), y1 = std::min(clip.y1 - 1, last_px(max_y));
    if (x0 > x1 || y0 > y1) return;

    // Edge i is opposite vertex i; its function is vertex i's barycentric weight × area.
    const Fixed& a = p[0];
    const Fixed& b = p[1];
    const Fixed& c = p[2];
    const Fixed start{int64_t(x0) * kOne + kOne / 2, int64_t(y0) * kOne + kOne / 2};
    int64_t row_w[3] = {orient(b, c, start), orient(c, a, start), orient(a, b, start)};
    const int64_t step_x[3] = {-(c.y - b.y) * kOne, -(a.y - c.y) * kOne, -(b.y - a.y) * kOne};
    const int64_t step_y[3] = {(c.x - b.x) * kOne, (a.x - c.x) * kOne, (b.x - a.x) * kOne};
    const int64_t bias[3] = {owns_edge(b, c) ? 0 : -1, owns_edge(c, a) ? 0 : -1, owns_edge(a, b) ? 0 : -1};

    Rgba col[3];
    ImVec2 uv[3];
    for (int k = 0; k < 3; ++k) col[k] = unpack(v[order[k]]->col), uv[k] = v[order[k]]->uv;
    const bool flat = v[0]->col == v[1]->col && v[1]->col == v[2]->col;
    const bool flat_uv = uv[0].x == uv[1].x && uv[1].x == uv[2].x && uv[0].y == uv[1].y && uv[1].y == uv[2].y;
    const float flat_cov = tex && flat_uv ? sample(*tex, uv[0].x, uv[0].y) : 1.0f;
    const double inv_area = 1.0 / double(area);

    for (int y = y0; y <= y1; ++y) {
        int64_t w[3] = {row_w[0], row_w[1], row_w[2]};
        uint8_t* px = out.rgba.data() + (size_t(y) * size_t(out.width) + size_t(x0)) * 4;
        for (int x = x0; x <= x1; ++x, px += 4) {
            if (w[0] + bias[0] >= 0 && w[1] + bias[1] >= 0 && w[2] + bias[2] >= 0) {
                const float l0 = float(double(w[0]) * inv_area), l1 = float(double(w[1]) * inv_area),
                            l2 = 1.0f - l0 - l1;
                Rgba s = flat ? col[0]
                              : Rgba{l0 * col[0].r + l1 * col[1].r + l2 * col[2].r,
                                     l0 * col[0].g + l1 * col[1].g + l2 * col[2].g,
                                     l0 * col[0].b + l1 * col[1].b + l2 * col[2].b,
                                     l0 * col[0].a + l1 * col[1].a + l2 * col[2].a};
                if (tex) {
                    s.a *= flat_uv ? flat_cov
                                   : sample(*tex, l0 * uv[0].x + l1 * uv[1].x + l2 * uv[2].x,
                                            l0 * uv[0].y + l1 * uv[1].y + l2 * uv[2].y);
                }
                if (s.a > 0) {
                    const float keep = 1 - s.a;
                    px[0] = to_byte(s.r * s.a + float(px[0]) / 255.0f * keep);
                    px[1] = to_byte(s.g * s.a + float(px[1]) / 255.0f * keep);
                    px[2] = to_byte(s.b * s.a + float(px[2]) / 255.0f * keep);
                    px[3] = to_byte(s.a + float(px[3]) / 255.0f * keep);
                }
            }
            for (int k = 0; k < 3; ++k) w[k] += step_x[k];
        }
        for (int k = 0; k < 3; ++k) row_w[k] += step_y[k];
    }
}

}  // namespace

RgbaImage::RgbaImage(int w, int h, ImU32 fill) : width(w), height(h), rgba(size_t(w) * size_t(h) * 4) {
    TW_ASSERT(w >= 0 && h >= 0);
    for (size_t i = 0; i < rgba.size(); i += 4) {
        rgba[i + 0] = uint8_t(fill >> IM_COL32_R_SHIFT);
        rgba[i + 1] = uint8_t(fill >> IM_COL32_G_SHIFT);
        rgba[i + 2] = uint8_t(fill >> IM_COL32_B_SHIFT);
        rgba[i + 3] = uint8_t(fill >> IM_COL32_A_SHIFT);
    }
}

ImU32 RgbaImage::at(int x, int y) const {
    TW_ASSERT(x >= 0 && y >= 0 && x < width && y < height);
    const uint8_t* p = rgba.data() + (size_t(y) * size_t(width) + size_t(x)) * 4;
    return IM_COL32(p[0], p[1], p[2], p[3]);
}

void render_draw_data(const ImDrawData& dd, RgbaImage& out) {
    TW_ASSERT(out.rgba.size() == size_t(out.width) * size_t(out.height) * 4);
    const ImVec2 off = dd.DisplayPos, scale = dd.FramebufferScale;
    auto to_px = [&](ImVec2 p) { return ImVec2((p.x - off.x) * scale.x, (p.y - off.y) * scale.y); };
    for (int l = 0; l < dd.CmdListsCount; ++l) {
        const ImDrawList& list = *dd.CmdLists[l];
        for (const ImDrawCmd& cmd : list.CmdBuffer) {
            if (cmd.UserCallback) continue;
            // A pixel is inside the clip rectangle when its centre is (glScissor's rectangle when
            // the corners are whole pixels, as ImGui's are).
            const ImVec2 cmin = to_px(ImVec2(cmd.ClipRect.x, cmd.ClipRect.y));
            const ImVec2 cmax = to_px(ImVec2(cmd.ClipRect.z, cmd.ClipRect.w));
            PixelRect clip{std::max(0, int(std::ceil(cmin.x - 0.5f))), std::max(0, int(std::ceil(cmin.y - 0.5f))),
                           std::min(out.width, int(std::ceil(cmax.x - 0.5f))),
                           std::min(out.height, int(std::ceil(cmax.y - 0.5f)))};
            if (clip.x0 >= clip.x1 || clip.y0 >= clip.y1) continue;
            const auto* tex = static_cast<const SoftTexture*>(cmd.TextureId);
            for (unsigned i = 0; i + 2 < cmd.ElemCount + 0u; i += 3) {
                const ImDrawVert* v[3];
                ImVec2 pos[3];
                for (int k = 0; k < 3; ++k) {
                    const unsigned idx = cmd.VtxOffset + list.IdxBuffer[int(cmd.IdxOffset + i + unsigned(k))];
                    TW_ASSERT(idx < unsigned(list.VtxBuffer.Size));
                    v[k] = &list.VtxBuffer[int(idx)];
                    pos[k] = to_px(v[k]->pos);
                }
                draw_triangle(v, pos, tex, clip, out);
            }
        }
    }
}

}  // namespace tw::ui
