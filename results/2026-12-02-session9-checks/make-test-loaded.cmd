# make test on main at 5e7f7ab+ (a5a72a3: code as at 8c09e46), 2026-12-02 08:42-08:47 UTC,
# beside two CPU busy loops (sh -c 'while :; do :; done', x2) on the 2-core machine:
make test
