// Screenshots of the OpenGL read buffer to PNG (png.h).
#include <GL/gl.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ui/plot/png.h"

namespace tw::ui {

Status save_framebuffer_png(const std::string& path, int x, int y, int w, int h) {
    if (w <= 0 || h <= 0) {
        return Status::error(path + ": cannot save an empty region (" + std::to_string(w) + " x " + std::to_string(h) +
                             " pixels)");
    }
    while (glGetError() != GL_NO_ERROR) {
    }  // earlier errors are not ours
    const size_t stride = size_t(w) * 3;
    std::vector<uint8_t> pixels(stride * size_t(h));
    GLint pack_alignment = 4;
    glGetIntegerv(GL_PACK_ALIGNMENT, &pack_alignment);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);  // rows of 3·w bytes, no padding
    glReadPixels(x, y, w, h, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
    glPixelStorei(GL_PACK_ALIGNMENT, pack_alignment);
    if (const GLenum err = glGetError(); err != GL_NO_ERROR) {
        return Status::error(path + ": glReadPixels failed with GL error " + std::to_string(err));
    }
    // GL's rows go bottom to top, PNG's top to bottom.
    std::vector<uint8_t> row(stride);
    for (int i = 0; i < h / 2; ++i) {
        uint8_t* a = pixels.data() + size_t(i) * stride;
        uint8_t* b = pixels.data() + size_t(h - 1 - i) * stride;
        std::memcpy(row.data(), a, stride);
        std::memcpy(a, b, stride);
        std::memcpy(b, row.data(), stride);
    }
    return write_png(path, w, h, 3, pixels.data(), int(stride));
}

}  // namespace tw::ui
