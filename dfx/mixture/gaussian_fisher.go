package mixture

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"
)

// matvec sets out's rows of the block's points [lo, hi) to F v = Σ_k r_k
// [C_k⁻¹ v − dev_k (dev_k·v)], for each of the m vectors a point of V has
// (Query.V; point i's j-th at row j·B + i of V and out): the m·nb vectors
// go through each component's two products together.
func (g *Gaussian) matvec(vm *mat.Dense, b, lo, hi int, active []int, resp, devs []float64, cs [][]float64, cp []componentAt, out *mat.Dense) {
	d, kk, nb := g.d, g.Components(), hi-lo
	rows, _ := out.Dims()
	sets := rows / b
	n := sets * nb // row s·nb + i: point lo+i's vector s
	v := make([]float64, n*d)
	for s := range sets {
		for i := 0; i < nb; i++ {
			copy(v[(s*nb+i)*d:(s*nb+i+1)*d], vecRow(vm, s*b+lo+i))
		}
	}
	acc := make([]float64, n*d)
	proj := make([]float64, n*d)
	back := make([]float64, n*d)
	for p, k := range active {
		r := g.Rank(k)
		c := cp[k]
		gemmFn(blas.NoTrans, blas.NoTrans, 1, general(n, d, v), denseGeneral(g.u[k]), 0, general(n, r, proj[:n*r]))
		for i := 0; i < n; i++ {
			for j := 0; j < r; j++ {
				proj[i*r+j] *= 1/cs[k][j] - c.inv
			}
		}
		gemmFn(blas.NoTrans, blas.Trans, 1, general(n, r, proj[:n*r]), denseGeneral(g.u[k]), 0, general(n, d, back))
		for row := 0; row < n; row++ {
			i := row % nb
			w := resp[i*kk+k]
			vi, bi, ai := v[row*d:(row+1)*d], back[row*d:(row+1)*d], acc[row*d:(row+1)*d]
			for _, j := range g.idle[k] {
				bi[j] += vi[j] * (c.idleInv - c.inv)
			}
			dev := devs[p*nb*d+i*d : p*nb*d+(i+1)*d]
			dv := dot(dev, vi)
			for j := range ai {
				ai[j] += w * (bi[j] + vi[j]*c.inv - dv*dev[j])
			}
		}
	}
	for s := range sets {
		for i := 0; i < nb; i++ {
			copy(out.RawRowView(s*b+lo+i), acc[(s*nb+i)*d:(s*nb+i+1)*d])
		}
	}
}

// fullFisher is row i's F as a d×d matrix.
func (g *Gaussian) fullFisher(i, nb int, active []int, resp, devs []float64, cs [][]float64, cp []componentAt) *mat.SymDense {
	d, kk := g.d, g.Components()
	f := mat.NewSymDense(d, nil)
	raw := f.RawSymmetric()
	for p, k := range active {
		w := resp[i*kk+k]
		if w == 0 {
			continue
		}
		r := g.Rank(k)
		c := cp[k]
		dev := devs[p*nb*d+i*d : p*nb*d+(i+1)*d]
		u := g.u[k]
		for p := 0; p < d; p++ {
			up := u.RawRowView(p)
			for s := p; s < d; s++ {
				us := u.RawRowView(s)
				v := -dev[p] * dev[s]
				for l := 0; l < r; l++ {
					v += up[l] * us[l] * (1/cs[k][l] - c.inv)
				}
				if p == s {
					v += c.inv
				}
				raw.Data[p*raw.Stride+s] += w * v
			}
		}
		for _, j := range g.idle[k] {
			raw.Data[j*raw.Stride+j] += w * (c.idleInv - c.inv)
		}
	}
	return f
}
