# Per-file ISA flags of the SIMD kernel tables (included by libcact/CMakeLists.txt
# after cact_kernels is created): one file per table under src/kernels/x86/ and
# src/kernels/arm/. Each SIMD file is guarded by the ISA macros its flags
# define, so on another architecture it compiles to an empty object;
# dispatch.cpp (baseline flags) learns which tables exist from the CACT_HAVE_*
# definitions set here and asks cpu_features() at run time.
# The files and their flags are also written to
# ${CMAKE_BINARY_DIR}/isa_flagged_sources.txt for the weak_symbols test.
include(CheckCXXCompilerFlag)

# Bit-identical results between tables (and between x86 and aarch64 scalar
# builds) need every float operation rounded as written: no FMA contraction.
target_compile_options(cact_kernels PRIVATE -ffp-contract=off)

set(_cact_kernel_defs "")
set(_cact_isa_sources "")
# A table file with its flags (none: the architecture's baseline) and the
# CACT_HAVE_* definition that tells dispatch.cpp it exists.
function(cact_kernel_table file have)
  set(flags ${ARGN})
  if(flags)
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${flags}")
  endif()
  list(JOIN flags " " flag_line)
  set(_cact_isa_sources "${_cact_isa_sources}${CMAKE_CURRENT_SOURCE_DIR}/${file}\t${flag_line}\n" PARENT_SCOPE)
  set(_cact_kernel_defs ${_cact_kernel_defs} ${have} PARENT_SCOPE)
endfunction()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  # One implementation (the headers of src/kernels/x86/), several flag sets;
  # each table is used only on a CPU that has its features (dispatch.cpp).
  check_cxx_compiler_flag("-mavx2 -mf16c" CACT_CXX_HAS_AVX2)
  if(CACT_CXX_HAS_AVX2)
    cact_kernel_table(src/kernels/x86/avx2.cpp CACT_HAVE_AVX2 -mavx2 -mf16c)
    # The engine's float widths (cact/vec.h VecIsa) fuse multiply-adds: + FMA.
    cact_kernel_table(src/kernels/x86/float_avx2.cpp CACT_HAVE_FLOAT_AVX2 -mavx2 -mfma -mf16c)
    # The int8 KV cache's quantiser and scores on ymm registers (cact/float_kernels.h).
    cact_kernel_table(src/kernels/x86/kv_int8_avx2.cpp CACT_HAVE_KV_AVX2 -mavx2)
    check_cxx_compiler_flag("-mavx512f -mfma -mf16c" CACT_CXX_HAS_AVX512F)
    if(CACT_CXX_HAS_AVX512F)
      cact_kernel_table(src/kernels/x86/float_avx512.cpp CACT_HAVE_FLOAT_AVX512 -mavx512f -mfma -mf16c)
    endif()
    check_cxx_compiler_flag("-mavx2 -mf16c -mavxvnni" CACT_CXX_HAS_AVXVNNI)
    if(CACT_CXX_HAS_AVXVNNI)
      cact_kernel_table(src/kernels/x86/avx_vnni.cpp CACT_HAVE_AVXVNNI -mavx2 -mf16c -mavxvnni)
    endif()
    # The avx512-vnni and avx512-vbmi tables run their CQ tiles on zmm
    # registers (AVX512-BW byte shuffles) and their dots on VPDPBUSD.
    check_cxx_compiler_flag("-mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni" CACT_CXX_HAS_AVX512VNNI)
    if(CACT_CXX_HAS_AVX512VNNI)
      cact_kernel_table(src/kernels/x86/avx512_vnni.cpp CACT_HAVE_AVX512VNNI
                        -mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni)
      # The int8 KV cache's quantiser and scores (cact/float_kernels.h).
      cact_kernel_table(src/kernels/x86/kv_int8_avx512_vnni.cpp CACT_HAVE_KV_AVX512VNNI
                        -mavx512f -mavx512bw -mavx512vl -mavx512vnni)
      # avx512-amx: the avx512-vbmi table with its multi-vector product on AMX-INT8 tiles.
      check_cxx_compiler_flag("-mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512vbmi -mamx-tile -mamx-int8"
                              CACT_CXX_HAS_AMX)
      if(CACT_CXX_HAS_AMX)
        cact_kernel_table(src/kernels/x86/avx512_amx.cpp CACT_HAVE_AMX
                          -mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512vbmi -mamx-tile -mamx-int8)
      endif()
    endif()
  endif()
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  # neon.cpp: baseline ARMv8-A Advanced SIMD (every aarch64 CPU, e.g. the
  # Cortex-A53/A72 of routers and single-board computers).
  cact_kernel_table(src/kernels/arm/neon.cpp CACT_HAVE_NEON)
  # The int8 KV cache's quantiser, scores and value sums on baseline NEON.
  cact_kernel_table(src/kernels/arm/kv_int8_neon.cpp CACT_HAVE_KV_NEON)
  check_cxx_compiler_flag("-march=armv8.2-a+dotprod" CACT_CXX_HAS_DOTPROD)
  if(CACT_CXX_HAS_DOTPROD)
    cact_kernel_table(src/kernels/arm/neon_dotprod.cpp CACT_HAVE_NEON_DOTPROD -march=armv8.2-a+dotprod)
    cact_kernel_table(src/kernels/arm/kv_int8_dotprod.cpp CACT_HAVE_KV_DOTPROD -march=armv8.2-a+dotprod)
  endif()
endif()
if(_cact_kernel_defs)
  set_source_files_properties(src/kernels/dispatch.cpp PROPERTIES COMPILE_DEFINITIONS "${_cact_kernel_defs}")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/isa_flagged_sources.txt "${_cact_isa_sources}")
unset(_cact_kernel_defs)
unset(_cact_isa_sources)
