// advise_huge_pages(p, bytes): asks the system to back the whole 2 MiB pages inside [p, p + bytes)
// with huge pages when they are first touched (Linux's MADV_HUGEPAGE, for systems whose transparent
// huge pages are "madvise"); elsewhere nothing. For large buffers filled once (a million imported
// events): one fault per 2 MiB instead of per 4 KiB. Never fails: refused advice changes nothing.
// pre: [p, p + bytes) is memory this process allocated and holds (an anonymous mapping).
#pragma once

#include <cstddef>

namespace kiln {

void advise_huge_pages(void* p, size_t bytes);

}  // namespace kiln
