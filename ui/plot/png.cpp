// PNG writing (png.h). The only place stb_image_write's implementation is compiled; it is compiled
// static so it cannot clash with the copy in Debian's libstb that imgui's pkg-config pulls in.
#include "ui/plot/png.h"

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace tw::ui {

Status write_png(const std::string& path, int w, int h, int channels, const uint8_t* pixels, int stride_bytes) {
    if (w <= 0 || h <= 0) {
        return Status::error(path + ": cannot save an empty region (" + std::to_string(w) + " x " + std::to_string(h) +
                             " pixels)");
    }
    if (!stbi_write_png(path.c_str(), w, h, channels, pixels, stride_bytes)) {
        return Status::error(path + ": cannot write the PNG file");
    }
    return Status::ok();
}

}  // namespace tw::ui
