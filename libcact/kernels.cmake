# Per-file ISA flags of the SIMD kernel tables (included by libcact/CMakeLists.txt
# after cact_kernels is created). Each SIMD file is guarded by the ISA macros
# its flags define, so on another architecture it compiles to an empty object;
# dispatch.cpp (baseline flags) learns which tables exist from the
# CACT_HAVE_* definitions set here and checks the CPU at run time.
include(CheckCXXCompilerFlag)

# Bit-identical results between tables (and between x86 and aarch64 scalar
# builds) need every float operation rounded as written: no FMA contraction.
target_compile_options(cact_kernels PRIVATE -ffp-contract=off)

set(_cact_kernel_defs "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  # One implementation (avx2_impl.h), three flag sets; each table is used only
  # on a CPU that has its features (dispatch.cpp).
  check_cxx_compiler_flag("-mavx2 -mf16c" CACT_CXX_HAS_AVX2)
  if(CACT_CXX_HAS_AVX2)
    set_source_files_properties(src/kernels/avx2.cpp PROPERTIES COMPILE_OPTIONS "-mavx2;-mf16c")
    list(APPEND _cact_kernel_defs CACT_HAVE_AVX2)
    check_cxx_compiler_flag("-mavx2 -mf16c -mavxvnni" CACT_CXX_HAS_AVXVNNI)
    if(CACT_CXX_HAS_AVXVNNI)
      set_source_files_properties(src/kernels/avx_vnni.cpp PROPERTIES COMPILE_OPTIONS "-mavx2;-mf16c;-mavxvnni")
      list(APPEND _cact_kernel_defs CACT_HAVE_AVXVNNI)
    endif()
    # The avx512-vnni table runs its CQ tiles on zmm registers (AVX512-BW byte
    # shuffles) and its dots on VPDPBUSD.
    check_cxx_compiler_flag("-mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni" CACT_CXX_HAS_AVX512VNNI)
    if(CACT_CXX_HAS_AVX512VNNI)
      set_source_files_properties(src/kernels/avx512_vnni.cpp PROPERTIES COMPILE_OPTIONS
                                  "-mavx2;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni")
      list(APPEND _cact_kernel_defs CACT_HAVE_AVX512VNNI)
      # avx512-amx: the avx512-vnni table with its multi-vector product on AMX-INT8 tiles.
      check_cxx_compiler_flag("-mavx2 -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512vbmi -mamx-tile -mamx-int8"
                              CACT_CXX_HAS_AMX)
      if(CACT_CXX_HAS_AMX)
        set_source_files_properties(src/kernels/amx.cpp PROPERTIES COMPILE_OPTIONS
                                    "-mavx2;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mavx512vbmi;-mamx-tile;-mamx-int8")
        list(APPEND _cact_kernel_defs CACT_HAVE_AMX)
      endif()
    endif()
  endif()
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  # neon.cpp: baseline ARMv8-A Advanced SIMD (every aarch64 CPU, e.g. the
  # Cortex-A53/A72 of routers and single-board computers).
  list(APPEND _cact_kernel_defs CACT_HAVE_NEON)
  check_cxx_compiler_flag("-march=armv8.2-a+dotprod" CACT_CXX_HAS_DOTPROD)
  if(CACT_CXX_HAS_DOTPROD)
    set_source_files_properties(src/kernels/neon_dotprod.cpp PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
    list(APPEND _cact_kernel_defs CACT_HAVE_NEON_DOTPROD)
  endif()
endif()
if(_cact_kernel_defs)
  set_source_files_properties(src/kernels/dispatch.cpp PROPERTIES COMPILE_DEFINITIONS "${_cact_kernel_defs}")
endif()
unset(_cact_kernel_defs)
