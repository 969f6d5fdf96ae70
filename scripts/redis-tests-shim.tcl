# Loaded by scripts/redis_type_tests.sh into Redis's test suite (after tests/support/util.tcl). anykv has one
# storage layout per type and no RDB snapshots, so it has no encoding thresholds to tune and no `save` schedule;
# CONFIG SET of those parameters answers OK here without reaching the server, so the tests that set them still
# check the data they produce (encoding checks are off via --ignore-encoding). See docs/resp.md.

set ::anykv_noop_config {
    save list-compress-depth set-max-intset-entries set-max-listpack-entries
    list-max-ziplist-size list-max-listpack-size
    hash-max-ziplist-entries hash-max-ziplist-value hash-max-listpack-entries hash-max-listpack-value
    zset-max-ziplist-entries zset-max-ziplist-value zset-max-listpack-entries zset-max-listpack-value
    stream-node-max-bytes
}

# anykv_noop_config_set reports whether args is a CONFIG SET of only the parameters above.
proc anykv_noop_config_set {args} {
    if {[llength $args] < 4 || [string tolower [lindex $args 0]] ne "config" ||
        [string tolower [lindex $args 1]] ne "set"} {
        return 0
    }
    foreach {name value} [lrange $args 2 end] {
        if {[lsearch -exact $::anykv_noop_config [string tolower $name]] < 0} { return 0 }
    }
    return 1
}

proc r {args} {
    set level 0
    if {[string is integer [lindex $args 0]]} {
        set level [lindex $args 0]
        set args [lrange $args 1 end]
    }
    if {[anykv_noop_config_set {*}$args]} { return OK }
    [srv $level "client"] {*}$args
}

# Files whose start_server blocks are tagged external:skip only because they change what a shared server would
# keep for the next file (ACL users, the ACL log): listed in REDIS_TESTS_RUN_EXTERNAL (e.g. "tests/unit/acl.tcl"),
# their blocks that ask for no configuration of their own (overrides, a config file) run against anykv too.
rename start_server anykv_start_server
proc start_server {options {code undefined}} {
    if {[info exists ::env(REDIS_TESTS_RUN_EXTERNAL)] &&
        [lsearch -exact $::env(REDIS_TESTS_RUN_EXTERNAL) $::curfile] >= 0 && [dict exists $options tags] &&
        ![dict exists $options config] && ![dict exists $options overrides]} {
        set tags [string map {\" ""} [dict get $options tags]]
        dict set options tags [lsearch -all -inline -not -exact $tags external:skip]
    }
    if {$code eq "undefined"} {
        return [anykv_start_server $options]
    }
    uplevel 1 [list anykv_start_server $options $code]
}
