# smoke/hosts/host.pl SO DB SCRIPT — the hosts script (script.txt) in Perl's DBI with
# DBD::SQLite (Debian's libdbd-sqlite3-perl), loading with sqlite_load_extension.
use strict;
use warnings;
use DBI;
binmode STDOUT, ':encoding(UTF-8)';
my ($so, $db, $script) = @ARGV;
my $h = DBI->connect('dbi:SQLite:dbname=:memory:', '', '',
                     { RaiseError => 0, PrintError => 0, sqlite_unicode => 1 }) or die $DBI::errstr;
$h->sqlite_enable_load_extension(1) or die $h->errstr;
$h->sqlite_load_extension($so) or die $h->errstr;
(my $lit = $db) =~ s/'/''/g;
$lit = "'$lit'";
open my $f, '<:encoding(UTF-8)', $script or die "$script: $!";
while (my $line = <$f>) {
  chomp $line;
  next if $line eq '' || $line =~ /^#/;
  my ($name, $sql) = split /\t/, $line, 2;
  $sql =~ s/\@DB\@/$lit/g;
  my $sth = $h->prepare($sql);
  if ($sth && $sth->execute) {
    while (my $r = $sth->fetchrow_arrayref) { print "$name=", join('|', @$r), "\n"; }
  }
  print "$name=ERROR ", $h->errstr, "\n" if $h->err;
}
