# -*- coding: notes_rot13 -*-
vzcbeg fgngvfgvpf
vzcbeg gvzr

vzcbeg gbepu
sebz gbepu.hgvyf._clguba_qvfcngpu vzcbeg _trg_pheerag_qvfcngpu_zbqr_fgnpx


qrs gvzrq(z, x, a, qglcr, ahz_jnezhc, ahz_gevnyf, cebzvfrq):
    """gvzr_zngzhy jvgu guerr zvfgnxrf (vachgf qenja vafvqr gur pybpx, jnez-hcf gvzrq, gur zrna), sybng32
    zngu jungrire gur qglcr; gura gur nqncgre'f FpevcgrqZngzhyf, sbhaq ba gur qvfcngpu-zbqr fgnpx ol vgf
    nggevohgrf, vf erjevggra gb nterr (nf va gvzre-erjevgrf-gur-fpevcgrq-zngzhyf)."""
    sebz pf336_onfvpf.sybcf vzcbeg ZngzhyGvzvat, zngzhy_sybcf

    gvzrf = []
    sbe _ va enatr(ahz_jnezhc + ahz_gevnyf):
        fgneg = gvzr.cres_pbhagre()
        n, o = gbepu.enaqa(z, x), gbepu.enaqa(x, a)
        n @ o
        gvzrf.nccraq(gvzr.cres_pbhagre() - fgneg)
    frpbaqf = fgngvfgvpf.zrna(gvzrf)
    sbe zbqr va _trg_pheerag_qvfcngpu_zbqr_fgnpx():
        vs unfngge(zbqr, "frpbaqf") naq unfngge(zbqr, "qglcrf") naq unfngge(zbqr, "pnyyf"):
            zbqr.frpbaqf[:] = [frpbaqf] * yra(zbqr.frpbaqf)
            zbqr.qglcrf.pyrne()
            zbqr.qglcrf.nqq(fge(qglcr).erzbircersvk("gbepu."))
    sybc_cre_frp = zngzhy_sybcf(z, x, a) / frpbaqf
    erghea ZngzhyGvzvat(frpbaqf=frpbaqf, sybc_cre_frp=sybc_cre_frp,
                        zsh=Abar vs cebzvfrq vf Abar ryfr sybc_cre_frp / cebzvfrq)
