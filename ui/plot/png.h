// PNG files: pixels in memory to a file (stb_image_write; no GL, in tw_ui_draw), and screenshots of
// the current OpenGL read buffer (png_gl.cpp, in tw_ui_plot).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tw::ui {

// Writes `w` × `h` pixels of `channels` bytes each (3: RGB, 4: RGBA), rows top to bottom and
// `stride_bytes` apart, as a PNG at `path`. Errors (empty size, an unwritable path) name the path.
Status write_png(const std::string& path, int w, int h, int channels, const uint8_t* pixels, int stride_bytes);

// Reads the w × h pixels whose bottom-left corner is (x, y) in GL window coordinates (origin at the
// bottom left, in framebuffer pixels, not ImGui's points) from the current read buffer with
// glReadPixels, flips the rows so the PNG is upright, and writes an RGB PNG to `path`.
// For the default double-buffered framebuffer the read buffer is GL_BACK: call it after
// ImGui_ImplOpenGL3_RenderDrawData and before glfwSwapBuffers. Needs a current GL context.
// Errors (empty or negative size, a GL error, an unwritable path) come back with the path named.
Status save_framebuffer_png(const std::string& path, int x, int y, int w, int h);

}  // namespace tw::ui
