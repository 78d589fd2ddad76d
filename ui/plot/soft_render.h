// A CPU rasteriser for ImGui's draw data: the plot widget rendered to pixels with no GL context,
// window or X server (thinwire report on CI). ImGui's draw lists hold only triangles with
// per-vertex colour and texture coordinates, each command clipped to a rectangle; this file draws
// exactly that, the way ImGui's OpenGL3 backend asks the GPU to: pixel centres sampled, the
// texture read with bilinear filtering (ImGui's textured anti-aliased lines need it), colour ×
// texture blended "source over" (GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA).
#pragma once

#include <imgui.h>

#include <cstdint>
#include <vector>

namespace tw::ui {

// An 8-bit RGBA picture, rows top to bottom, no padding.
struct RgbaImage {
    int width = 0, height = 0;  // pixels
    std::vector<uint8_t> rgba;  // [height, width, 4]

    RgbaImage() = default;
    RgbaImage(int w, int h, ImU32 fill);  // every pixel `fill` (IM_COL32)
    ImU32 at(int x, int y) const;         // the pixel as IM_COL32 (R in the low byte)
};

// A texture that draw commands refer to by ImTextureID: a pointer to one of these. For ImGui's
// font atlas, `alpha` is GetTexDataAsAlpha8's output and the texel is (255, 255, 255, alpha), as
// the backends upload it. The texture must outlive the rendering.
struct SoftTexture {
    int width = 0, height = 0;       // texels
    const uint8_t* alpha = nullptr;  // [height, width] coverage, 0..255
};

// Rasterises `dd` into `out`, on top of what `out` holds. Coordinates are ImGui's: the pixel
// (x, y) of `out` covers [dd.DisplayPos + (x, y), + (1, 1)) scaled by dd.FramebufferScale.
// A command's TextureId is read as `const SoftTexture*`; null means untextured (colour only).
// Triangles of either winding are drawn; a pixel belongs to a triangle when its centre is inside
// (on an edge: GL's top-left rule in GL's y-up framebuffer, on 1/256-pixel fixed point), so
// neighbouring triangles neither leave cracks nor blend twice, and a shape whose edges run
// through pixel centres covers the pixels it covers in the workbench. User callbacks are skipped.
void render_draw_data(const ImDrawData& dd, RgbaImage& out);

// ---------------------------------------------------------------------------------------------
// Intended usage (see ui/plot/offscreen.h, which wraps all of this for the plot widget):
//
//   unsigned char* px; int w, h;
//   ImGui::GetIO().Fonts->GetTexDataAsAlpha8(&px, &w, &h);
//   tw::ui::SoftTexture font{w, h, px};
//   ImGui::GetIO().Fonts->SetTexID(&font);
//   ... ImGui::NewFrame(); draw; ImGui::Render();
//   tw::ui::RgbaImage img(800, 600, IM_COL32_WHITE);
//   tw::ui::render_draw_data(*ImGui::GetDrawData(), img);
// ---------------------------------------------------------------------------------------------

}  // namespace tw::ui
