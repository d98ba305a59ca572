//go:build amd64 && !noasm

#include "textflag.h"

// The 8×24 register block is unrolled on purpose (a register cannot be
// indexed): the macros below name the steps done on one row of accumulators,
// and the rows' registers are spelt out where a step is used.

// ZERO_ROW clears one row's accumulators c0–c2.
#define ZERO_ROW(c0, c1, c2) \
	VPXORQ c0, c0, c0; \
	VPXORQ c1, c1, c1; \
	VPXORQ c2, c2, c2

// FMA_ROW broadcasts Ã's element at off(SI) into z and adds it times B̃'s
// three vectors (Z24–Z26) to one row's accumulators c0–c2.
#define FMA_ROW(off, z, c0, c1, c2) \
	VBROADCASTSD off(SI), z; \
	VFMADD231PD Z24, z, c0; \
	VFMADD231PD Z25, z, c1; \
	VFMADD231PD Z26, z, c2

// ADD_ROW adds C's row at DX into one row's accumulators c0–c2.
#define ADD_ROW(c0, c1, c2) \
	VADDPD 0(DX), c0, c0; \
	VADDPD 64(DX), c1, c1; \
	VADDPD 128(DX), c2, c2

// STORE_ROW writes one row's accumulators c0–c2 to C's row at DX.
#define STORE_ROW(c0, c1, c2) \
	VMOVUPD c0, (DX); \
	VMOVUPD c1, 64(DX); \
	VMOVUPD c2, 128(DX)

// ADD_STORE_ROW adds C's row at DX into one row's accumulators and writes
// them back.
#define ADD_STORE_ROW(c0, c1, c2) ADD_ROW(c0, c1, c2); STORE_ROW(c0, c1, c2)

// EACH_ROW_DOWN_C applies OP to the eight rows' accumulators in turn, DX
// moving down one row of C (R8 bytes) between them.
#define EACH_ROW_DOWN_C(OP) \
	OP(Z0, Z1, Z2); ADDQ R8, DX; \
	OP(Z3, Z4, Z5); ADDQ R8, DX; \
	OP(Z6, Z7, Z8); ADDQ R8, DX; \
	OP(Z9, Z10, Z11); ADDQ R8, DX; \
	OP(Z12, Z13, Z14); ADDQ R8, DX; \
	OP(Z15, Z16, Z17); ADDQ R8, DX; \
	OP(Z18, Z19, Z20); ADDQ R8, DX; \
	OP(Z21, Z22, Z23)

// func kernel8x24(kc int, a, b, c *float64, ldc int, add bool)
//
// C[8×24] (+)= Ã·B̃ with Ã packed as kc groups of 8 (one per row) and B̃ as
// kc groups of 24 (one per column); C is row-major with stride ldc elements.
// Accumulators: Z0–Z23 (row i, columns 8j…8j+7 in Z(3i+j)); B̃ in Z24–Z26;
// broadcasts of Ã in Z27–Z31.
TEXT ·kernel8x24(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $3, R8
	ZERO_ROW(Z0, Z1, Z2)
	ZERO_ROW(Z3, Z4, Z5)
	ZERO_ROW(Z6, Z7, Z8)
	ZERO_ROW(Z9, Z10, Z11)
	ZERO_ROW(Z12, Z13, Z14)
	ZERO_ROW(Z15, Z16, Z17)
	ZERO_ROW(Z18, Z19, Z20)
	ZERO_ROW(Z21, Z22, Z23)
	TESTQ CX, CX
	JLE store
loop:
	VMOVUPD (DI), Z24
	VMOVUPD 64(DI), Z25
	VMOVUPD 128(DI), Z26
	FMA_ROW(0, Z27, Z0, Z1, Z2)
	FMA_ROW(8, Z28, Z3, Z4, Z5)
	FMA_ROW(16, Z29, Z6, Z7, Z8)
	FMA_ROW(24, Z30, Z9, Z10, Z11)
	FMA_ROW(32, Z31, Z12, Z13, Z14)
	FMA_ROW(40, Z27, Z15, Z16, Z17)
	FMA_ROW(48, Z28, Z18, Z19, Z20)
	FMA_ROW(56, Z29, Z21, Z22, Z23)
	ADDQ $64, SI
	ADDQ $192, DI
	DECQ CX
	JNZ loop
store:
	MOVBLZX add+40(FP), AX
	TESTL AX, AX
	JZ noadd
	EACH_ROW_DOWN_C(ADD_STORE_ROW)
	VZEROUPPER
	RET
noadd:
	EACH_ROW_DOWN_C(STORE_ROW)
	VZEROUPPER
	RET
