export PATH=/work/main/.venv/bin:$PATH
for rep in 1 2; do for d in $(seq 0.52 0.01 0.70); do
  for t in patched main; do
    c=/work/main; [ $t = main ] && c=/tmp/hupab/main
    r=$(TAG=$t HUPCWD=$c timeout 60 python /tmp/hupab/hup2.py $d 2 3 SIGHUP /tmp/rt41/bigf.npy --segments /tmp/rt41/bigflags.npy 2>&1 | head -1)
    echo "$t $d $r"
  done
done; done
