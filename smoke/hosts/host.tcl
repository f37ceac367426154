# smoke/hosts/host.tcl SO DB SCRIPT — the hosts script (script.txt) in Tcl's sqlite3 package
# (Debian's libsqlite3-tcl), loading the extension with load_extension().
package require sqlite3
lassign $argv so db script
sqlite3 h :memory:
h enable_load_extension 1
h eval {SELECT load_extension($so)}
set lit "'[string map {' ''} $db]'"
set f [open $script]
fconfigure $f -encoding utf-8
foreach line [split [read $f] \n] {
  if {$line eq "" || [string index $line 0] eq "#"} continue
  set tab [string first \t $line]
  set name [string range $line 0 [expr {$tab - 1}]]
  set sql [string map [list @DB@ $lit] [string range $line [expr {$tab + 1}] end]]
  if {[catch {
    h eval $sql row {
      set vals {}
      foreach c $row(*) { lappend vals $row($c) }
      puts "$name=[join $vals |]"
    }
  } msg]} {
    puts "$name=ERROR $msg"
  }
}
